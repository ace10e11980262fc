"""The papers' tables as data: spot checks against the printed tables and their citations."""

import pytest

from workbench import papers
from workbench.errors import InputError


def test_carin_table2_values_and_missing_variants():
    t = papers.model_table("uc1")
    assert t["table"] == "Table 2" and len(t["models"]) == 8
    lite4 = next(m for m in t["models"] if m["model"] == "EfficientNet Lite4")
    assert lite4["flops"] == 5.11e9 and lite4["params"] == 12.95e6
    assert lite4["accuracy"]["FFX8"] == 80.71
    xs = next(m for m in t["models"] if m["model"] == "MobileViT XS")
    assert xs["accuracy"]["DR8"] is None  # '-' in the paper: the variant does not exist


def test_agenet_is_lower_is_better_mae():
    t = papers.model_table("uc4-age")
    assert t["metric"] == "MAE" and t["higher_is_better"] is False
    assert t["models"][0]["accuracy"]["FFX8"] == 5.923


def test_yamnet_has_no_fixed_point_variants():
    m = papers.model_table("uc3-audio")["models"][0]
    assert m["accuracy"]["FX8"] is None and m["accuracy"]["FFX8"] is None


def test_device_tables():
    rows = papers.device_rows()
    assert set(rows) == {"pixel7", "s20fe", "a71", "xperia-c5"}
    assert rows["s20fe"]["soc"] == "Exynos 990" and rows["s20fe"]["table"] == "carin Table 6"
    assert rows["xperia-c5"]["table"] == "oodin Table I"
    assert papers.parse_ram("6 GB @2750 MHz") == (6.0, 2750.0)
    assert papers.parse_clocked("Mali-G77 MP11 @800 MHz") == ("Mali-G77 MP11", 800.0)


def test_oodin_table2_and_citations():
    rows = papers.paper("oodin")["models"]["rows"]
    assert len(rows) == 11
    assert any(r["model"] == "InceptionV3" and r["precision"] == "INT8" and r["accuracy"] == 77.5
               for r in rows)
    assert "SMARTCOMP" in papers.citation("oodin")
    assert "CARIn" in papers.citation("carin")


def test_unknown_names_are_clear():
    with pytest.raises(InputError, match="known: uc1"):
        papers.model_table("uc9")
    with pytest.raises(InputError, match="unknown paper"):
        papers.paper("nope")
