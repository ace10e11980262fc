"""A missing optional package is one MissingExtra (an ImportError and a WorkbenchError) naming
what needs it and the `pip install 'workbench[EXTRA]'` line; on the command line, one line."""

import sys

import pytest

from workbench.errors import MissingExtra, WorkbenchError


def _blocked(monkeypatch, *names):
    for n in names:  # None in sys.modules makes `import n` raise ImportError
        monkeypatch.setitem(sys.modules, n, None)


def test_the_message_names_what_needs_it_the_package_and_the_install_line():
    e = MissingExtra("Dask", "sweep", needs="a sweep on Dask", hint="or workers=0")
    assert isinstance(e, ImportError) and isinstance(e, WorkbenchError)
    assert str(e) == "a sweep on Dask needs Dask: pip install 'workbench[sweep]' (or workers=0)"


@pytest.mark.parametrize("blocked, call, extra", [
    (("keras", "tensorflow"), lambda: __import__("workbench.host.tf", fromlist=["x"]).keras(), "ml"),
    (("onnxruntime",), lambda: __import__("workbench.runtime.ort", fromlist=["x"])._ort(), "torch"),
    (("tokenizers",), lambda: __import__("workbench.host.minilm", fromlist=["x"]).encode(["a"], 8),
     "pretrained"),
    (("dask", "dask.distributed"),
     lambda: __import__("workbench.lab.sweep", fromlist=["x"]).dask_client(1, None), "sweep"),
])
def test_each_guard_raises_missing_extra(monkeypatch, blocked, call, extra):
    _blocked(monkeypatch, *blocked)
    with pytest.raises(MissingExtra) as err:
        call()
    assert err.value.extra == extra and f"pip install 'workbench[{extra}]'" in str(err.value)


def test_the_command_line_says_it_in_one_line(monkeypatch, capsys):
    from workbench.cli import main

    _blocked(monkeypatch, "optuna")
    assert main(["solve", "--use-case", "uc1", "--device", "s20fe", "--solver", "optuna-tpe"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "pip install 'workbench[tune]'" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
