"""The documentation travels with the repository: every repository path that README.md,
bench/README.md and docs/*.md name exists, nothing points outside the repository (the
developers' shared folder is not part of a clone), and the complete spaces in the docs load."""
from __future__ import annotations

import glob
import os
import re

import pytest

import beast
from conftest import ROOT, write_space

DOCS = ["README.md", os.path.join("bench", "README.md"), os.path.join("bench", "gpu.md"),
        *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]
TOP = ("beast/", "bench/", "docs/", "spaces/", "tests/", ".ci/", "../")


def _read(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as fh:
        return fh.read()


def _named_paths(text):
    """Paths in `code`, in code blocks and in Markdown links: those that start with a folder of
    the repository (or ``../``), and every relative link target."""
    spans = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    spans += re.findall(r"`([^`\n]+)`", re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S))
    for span in spans:
        for token in re.findall(r"[\w./{},*-]+", span):
            token = token.rstrip(".,")
            if token.startswith(TOP):
                yield token
    for target in re.findall(r"\]\(([^)\s#]+)", text):
        if not re.match(r"[a-z]+:", target):
            yield target


def _exists(doc, path):
    options = [path]
    braces = re.search(r"\{([^}]*)\}", path)
    if braces:
        options = [path[:braces.start()] + alt + path[braces.end():] for alt in braces.group(1).split(",")]
    for option in options:
        found = False
        for base in (ROOT, os.path.join(ROOT, os.path.dirname(doc))):
            full = os.path.normpath(os.path.join(base, option))
            if full.startswith(ROOT + os.sep) and glob.glob(full):
                found = True
        if not found:
            return False
    return True


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_doc_names_exists(doc):
    missing = sorted({p for p in _named_paths(_read(doc)) if not _exists(doc, p)})
    assert not missing, f"{doc} names paths that a clone does not have: {missing}"


def test_the_path_check_sees_what_it_should():
    text = "run `spaces/gemm.py` and `spaces/nope.py`; see [the rules](docs/semantics.md)\n" \
           "```sh\nbeast replay spaces/real/{convolution,gone}.py --data ../shared/x.json.gz\n```\n"
    paths = list(_named_paths(text))
    assert {"spaces/gemm.py", "spaces/nope.py", "docs/semantics.md",
            "spaces/real/{convolution,gone}.py", "../shared/x.json.gz"} <= set(paths)
    assert [p for p in paths if not _exists("README.md", p)] == \
        ["spaces/real/{convolution,gone}.py", "../shared/x.json.gz", "spaces/nope.py"]


def test_nothing_points_at_the_shared_folder():
    pattern = re.compile(r"/work/|\.\./shared|shared docs|LANGUAGE\.md")
    hits = []
    tops = [os.path.join(ROOT, d) for d in ("beast", "bench", "docs", "spaces", "tests", ".ci")]
    walks = [(ROOT, [], os.listdir(ROOT))] + [w for top in tops for w in os.walk(top)]
    for folder, dirs, files in walks:
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in files:
            if name.endswith((".py", ".md", ".toml", ".sh", ".txt")) and name != "test_docs.py":
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    hits += [f"{os.path.relpath(path, ROOT)}:{i}" for i, line in enumerate(fh, 1)
                             if pattern.search(line)]
    assert not hits, hits


def _spaces(doc):
    """The Python blocks of a doc that are whole space files."""
    return [b for b in re.findall(r"```python\n(.*?)```", _read(doc), re.S) if "from beast import *" in b]


@pytest.mark.parametrize("doc", ["README.md", os.path.join("docs", "language.md")])
def test_the_spaces_in_the_docs_load(doc, tmp_path):
    blocks = _spaces(doc)
    assert blocks
    for i, block in enumerate(blocks):
        beast.load(write_space(tmp_path, block, f"example{i}.py"))


def test_the_first_example_of_the_language_counts_as_it_says(tmp_path):
    doc = os.path.join("docs", "language.md")
    assert "`beast count first.py` prints 14" in _read(doc)
    space = beast.load(write_space(tmp_path, _spaces(doc)[0], "first.py"))
    assert space.count(backend="python") == 14 and tuple(space.iterators) == ("block", "tile")
