# SPDX-License-Identifier: BSD-3-Clause
"""The migration example of doc/python.md, run as written."""
import os
import re


def doc_example(name):
    path = os.path.join(os.environ.get("TSLOCK_SRCDIR", os.path.join(
        os.path.dirname(__file__), "..", "..", "..")), "doc", "python.md")
    with open(path) as f:
        text = f.read()
    m = re.search(r"<!-- example: %s -->\n```python\n(.*?)```" % name, text,
                  re.S)
    assert m, "doc/python.md has no example %r" % name
    return m.group(1)


def test_migration_example_runs(server, r):
    r.delete("lock.reports")
    code = doc_example("migration")
    exec(compile(code, "doc/python.md:migration", "exec"),
         {"url": server.url})
    assert r.get("lock.reports") is None
