"""User-supplied names are checked where they enter, and user text is escaped on its way to a
terminal (a name holding ESC [2J would clear the screen)."""

import pytest

from workbench.cli import main
from workbench.errors import InputError
from workbench.names import check_name, printable
from workbench.profiles import resolve_profile


@pytest.mark.parametrize("bad", ["a\x1b[2Jb", "tab\there", "new\nline", "\x9b31m", "bidi\u202e",
                                 "zero\u200bwidth", "", " lead", "trail ", "x" * 129, 5, None])
def test_a_name_with_control_characters_or_no_text_is_refused_naming_what(bad):
    with pytest.raises(InputError, match="device"):
        check_name(bad, what="device", where="device.name")


@pytest.mark.parametrize("good", ["S20 FE", "uc3-vision", "Xperia C5 Ultra", "é-ü", "1"])
def test_ordinary_names_pass_unchanged(good):
    assert check_name(good, what="device") == good


def test_printable_escapes_controls_and_keeps_lines_only_when_asked():
    assert printable("a\x1b[2Jb") == "a\\u001b[2Jb"
    assert printable("x\u202ey") == "x\\u202ey"
    assert printable("one\ntwo") == "one\\u000atwo"
    assert printable("one\ntwo", multiline=True) == "one\ntwo"


def test_the_cli_error_line_never_carries_a_raw_escape_sequence(tmp_path, capsys):
    bad = tmp_path / "evil\x1b]8;;http://x\x07.json"
    assert main(["solve", "--profile", str(bad), "--slo", "max A"]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\u001b" in err and err.count("\n") == 1


def test_user_text_reaches_stdout_escaped_and_json_stays_json(tmp_path, capsys):
    import json

    from workbench.names import EscapingWriter

    csv = tmp_path / "t.csv"
    csv.write_text("config,model,precision,processor,task,A,L\na,net,FP32,CPU,cls,70,5\n")
    out_path = tmp_path / "o\u202ex\x9b.json"
    assert main(["profiles", "import", str(csv), "--format", "csv", "--device", "phone",
                 "-o", str(out_path)]) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out and "\x9b" not in out and "o\\u202ex\\u009b.json" in out
    # JSON written through the same stream decodes to the text it was given.
    written = []
    EscapingWriter(type("S", (), {"write": lambda self, t: written.append(t)})()).write(
        json.dumps({"m": "notes \u202e \x9b31m"}, ensure_ascii=False))
    assert json.loads(written[0]) == {"m": "notes \u202e \x9b31m"}


def test_a_profile_refuses_control_characters_in_any_text(tmp_path):
    import json

    from workbench.profiles import load_profile

    for where in ("provenance.method", "tasks[0].metric"):
        data = json.loads(resolve_profile("s20fe").read_text())
        if where.startswith("prov"):
            data["provenance"]["method"] = "notes \x9b31m"
        else:
            data["tasks"][0]["metric"] = "top1\x1b[2J"
        p = tmp_path / "p.json"
        p.write_text(json.dumps(data))
        with pytest.raises(InputError, match="control characters") as e:
            load_profile(p)
        assert where in str(e.value)


@pytest.mark.parametrize("path", [("device", "name"), ("tasks", 0, "name"), ("configs", 0, "id"),
                                  ("configs", 0, "model"), ("configs", 0, "task")])
def test_a_profile_refuses_a_name_with_an_escape_code_naming_the_field(tmp_path, path):
    import json

    from workbench.profiles import load_profile

    data = json.loads(resolve_profile("s20fe").read_text())
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = "evil\x1b[2J"
    p = tmp_path / "p.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InputError, match="control characters") as e:
        load_profile(p)
    where = ".".join(str(k) if isinstance(k, str) else f"[{k}]" for k in path).replace(".[", "[")
    assert where.split("[")[0] in str(e.value)



def test_a_device_name_typed_with_an_escape_code_is_one_error_line(tmp_path, capsys):
    csv = tmp_path / "t.csv"
    csv.write_text("config,model,precision,processor,task,A,L\na,net,FP32,CPU,cls,70,5\n")
    assert main(["profiles", "import", str(csv), "--format", "csv", "--device", "\x1b[2Jphone",
                 "-o", str(tmp_path / "p.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--device" in err and "\x1b" not in err
    assert not (tmp_path / "p.json").exists()


def test_the_runtime_prints_a_bundle_path_escaped(tmp_path, capsys):
    from workbench.runtime.run import main as runtime_main

    bad = tmp_path / "b\x1b[2J"
    bad.mkdir()
    assert runtime_main(["check", str(bad)]) == 1
    assert runtime_main(["run", str(bad), "--duration", "1"]) == 1
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err and "\\u001b" in out.err


def test_models_add_refuses_an_arch_with_an_escape_code_before_any_work(tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "ws"))
    assert main(["models", "add", str(tmp_path / "absent.keras"), "--name", "m", "--task", "t",
                 "--arch", "A\x1b]0;pwned\x07"]) == 1
    err = capsys.readouterr().err
    assert "--arch" in err and "\x1b" not in err and err.count("\n") == 1


def test_memory_mode_names_have_one_home():
    """The profile schema, the layer programs and bundles take the names from one module."""
    from typing import get_args

    from workbench.memorymodes import MEMORY_MODES, PROGRAM_MODES
    from workbench.profiles.schema import MemoryMode
    from workbench.runtime.programs import MODES

    assert get_args(MemoryMode) == MEMORY_MODES == ("bulk", "streamed", "planned")
    assert MODES == PROGRAM_MODES and set(PROGRAM_MODES) < set(MEMORY_MODES)


def test_each_vocabulary_has_one_home():
    """Precisions, engine kinds, row sources, use cases and data kinds are each written once:
    every other module holds the same object (an `is`, so a list typed out again fails)."""
    from typing import get_args

    from workbench import papers, precisions, processors
    from workbench.host import quantise
    from workbench.host.registry import records
    from workbench.lab.reproduction import rules
    from workbench.lab.viz import embed
    from workbench.moo import usecases
    from workbench.profiles import schema
    from workbench.profiles.phone_model import variants

    assert schema.PRECISIONS is records.PRECISIONS is quantise.PRECISIONS \
        is precisions.PRECISIONS == get_args(precisions.Precision)
    assert schema.EngineKind is processors.EngineKind
    assert get_args(processors.EngineKind) == processors.KINDS
    assert usecases.NAMES is variants.USE_CASES is papers.USE_CASES
    assert embed.DATA_KINDS is rules.DATA_KINDS
