"""Reports carry no library noise: TensorFlow's import chatter and LiteRT's delegate line are held
back at their source, and a real message on the same stream still gets through."""

import subprocess
import sys

import pytest


def test_tensorflow_import_noise_is_held_back_but_real_errors_pass():
    pytest.importorskip("tensorflow")
    code = ("import os, sys\n"
            "from workbench.host import tf\n"
            "from workbench.nativelog import TF_IMPORT_NOISE, filtered_native_stderr\n"
            "tf.keras()\n"
            "with filtered_native_stderr(TF_IMPORT_NOISE):\n"
            "    os.write(2, b'oneDNN custom operations are on\\nreal trouble\\n')\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300).stderr
    assert "oneDNN custom operations" not in err and "absl::InitializeLog" not in err
    assert "real trouble" in err


def test_litert_delegate_line_is_held_back_but_other_lines_pass():
    code = ("import os, sys\n"
            "from workbench.nativelog import LITERT_NOISE, filtered_native_stderr\n"
            "with filtered_native_stderr(LITERT_NOISE):\n"
            "    os.write(2, b'INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\\n')\n"
            "    os.write(2, b'ERROR: failed to prepare node 3\\n')\n"
            "    print('python warning', file=sys.stderr)\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stderr
    assert "XNNPACK delegate" not in err
    assert "ERROR: failed to prepare node 3" in err and "python warning" in err
