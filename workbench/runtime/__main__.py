"""``python -m workbench.runtime {check,run} BUNDLE``: the runtime alone, no workbench extras."""

import sys

from .run import main

sys.exit(main())
