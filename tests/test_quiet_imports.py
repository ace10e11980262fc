"""Reports carry no library noise: TensorFlow's import chatter is held back at its source, and a
real message on the same stream still gets through."""

import subprocess
import sys

import pytest


def test_tensorflow_import_noise_is_held_back_but_real_errors_pass():
    pytest.importorskip("tensorflow")
    code = ("import os, sys\n"
            "from workbench.host import tf\n"
            "tf.keras()\n"
            "with tf._quiet_native_stderr():\n"
            "    os.write(2, b'oneDNN custom operations are on\\nreal trouble\\n')\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300).stderr
    assert "oneDNN custom operations" not in err and "absl::InitializeLog" not in err
    assert "real trouble" in err
