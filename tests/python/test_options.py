"""The link options are the library's option table (issue 42): the extension sets them by name
(fdl_link_options_set) and exports the table (_fdlink.LINK_OPTIONS); fdlink's keyword options and
the numbers of their enum words are built from it, and the stub's and docs/python.md's option
lists are compared with it here."""

import ast
import pathlib
import re

import pytest

import fdlink
from fdlink import _fdlink, _library

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = {row["name"]: row for row in _fdlink.LINK_OPTIONS}
# what the options dict holds of each kind (enums as their numbers)
STUB_TYPE = {"int": "int", "bool": "int", "tri": "int", "enum": "int", "string": "Optional[str]",
             "list": "List[str]"}


def test_the_table_is_exported():
    assert len(TABLE) == len(_fdlink.LINK_OPTIONS) >= 39  # one row per name
    assert list(TABLE)[0] == "arch"
    for name, row in TABLE.items():
        assert row["kind"] in STUB_TYPE, name
        assert row["help"], name
        assert row["min"] <= row["max"], name
        assert (row["words"] is not None) == (row["kind"] == "enum"), name
        if row["kind"] in ("string", "list"):
            assert row["default"] is None, name
        else:
            assert row["min"] <= row["default"] <= row["max"], name
    jtd = TABLE["jump_table_density"]
    assert (jtd["min"], jtd["max"], jtd["default"]) == (-1, 101, -1)
    assert jtd["expect"] == "a percentage 0..101, or -1 for the default"
    assert jtd["nvjitlink_only"] and not jtd["nvrtc"]
    assert TABLE["backend"]["words"] == ("auto", "nvjitlink", "culink")
    assert TABLE["cuda_output"]["nvrtc"] and TABLE["cache_lease_ms"]["long"]


def test_keyword_options_are_the_table():
    # arch is the functions' own parameter, every other row a keyword option
    assert _library._KNOWN == set(TABLE) - {"arch"}
    with pytest.raises(TypeError, match="unknown option"):
        _library._options("sm_90", {"no_such_option": 1})


def test_enum_numbers_are_the_table_and_as_they_were():
    # the maps as they were written by hand before the table: the same keys, order and numbers
    # (True/False for on/off, None for the default but not for backend)
    assert list(_library._BACKENDS.items()) == [("auto", 0), ("nvjitlink", 1), ("culink", 2)]
    for table in (_library._LTO, _library._CACHE):
        assert list(table.items()) == [("auto", 0), (True, 1), ("on", 1), (False, 2), ("off", 2),
                                       (None, 0)]
    assert list(_library._OUTPUT.items()) == [("auto", 0), ("ptx", 1), ("ltoir", 2), (None, 0)]
    assert _library._options("sm_90", {"backend": "culink", "lto": False})["lto"] == 2
    with pytest.raises(ValueError, match="option backend=None: expected one of 'auto', "
                                         "'nvjitlink', 'culink'"):
        _library._options("sm_90", {"backend": None})


def test_stub_lists_the_table():
    tree = ast.parse((ROOT / "python/fdlink/_fdlink.pyi").read_text())
    stub = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LinkOptions")
    got = {n.target.id: ast.unparse(n.annotation) for n in stub.body
           if isinstance(n, ast.AnnAssign)}
    want = {name: STUB_TYPE[row["kind"]] for name, row in TABLE.items()}
    stanza = "".join(f"    {name}: {kind}\n" for name, kind in want.items())
    assert list(got.items()) == list(want.items()), (
        "python/fdlink/_fdlink.pyi's LinkOptions should read, from the table:\n" + stanza)


def test_docs_list_the_table():
    text = (ROOT / "docs/python.md").read_text()
    row = next(line for line in text.splitlines() if "the link options of `fdl_link_options`" in line)
    listed = row[row.index("by name:"):row.index("(the C names, the C defaults)")]
    names = set(re.findall(r"`([a-z_]+)`", listed))
    assert names == set(TABLE) - {"arch"}, (
        f"docs/python.md's option list lacks {sorted(set(TABLE) - {'arch'} - names)}, "
        f"has {sorted(names - set(TABLE))} more")


def test_values_are_set_by_name_with_the_librarys_check():
    # a value out of bounds: the library's words, before anything is loaded
    with pytest.raises(fdlink.Error, match=r"invalid jump_table_density 102 \(expected a "
                                           r"percentage 0\.\.101, or -1 for the default\)"):
        _fdlink.Link({"arch": "sm_90", "jump_table_density": 102}, [], [])
    with pytest.raises(fdlink.Error, match=r"invalid arch 'sm_9'"):
        _fdlink.Link({"arch": "sm_9"}, [], [])
    # a value of the wrong type is named before a bad value, whatever the order
    with pytest.raises(TypeError, match="option xptxas must be a list of str, not a str"):
        _fdlink.Link({"arch": "sm_90", "jump_table_density": 102, "xptxas": "-v"}, [], [])
    with pytest.raises(TypeError, match="option debug: must be an int or a bool, not str"):
        _fdlink.Link({"arch": "sm_9", "debug": "yes"}, [], [])
    with pytest.raises(TypeError, match="option cache_lease_ms: must be an int, not bool"):
        _fdlink.Link({"arch": "sm_90", "cache_lease_ms": True}, [], [])
    with pytest.raises(ValueError, match=r"option opt_level.*out of range \(-1 to 1048576\)"):
        _fdlink.Link({"arch": "sm_90", "opt_level": 1 << 21}, [], [])
    with pytest.raises(fdlink.Error, match=r"require_warm is 2 \(expected -1, 0 or 1\)"):
        _fdlink.Link(_library._options("sm_90", {"require_warm": 2}), [], [])
