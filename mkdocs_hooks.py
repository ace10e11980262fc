"""mkdocs hooks for the documentation site (mkdocs.yml names this file under ``hooks:``).

The package's docstrings cross-reference in Sphinx roles (``:func:`solve```, ``:class:`~a.B```),
which read well in ``help()`` and the editor; mkdocstrings renders them as literal text
(``:func:solve``). This hook turns each into plain code, with the short name where the
reference starts with ``~`` (Sphinx's own rule), so the API page reads as prose.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:func|meth|class|mod|attr|data|obj|exc|const):<code>(~?)([^<]*)</code>")


def sphinx_roles_to_code(html: str) -> str:
    """``:func:<code>~a.b.c</code>`` -> ``<code>c</code>``; without ``~`` the name as written."""
    return _ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", html)


def on_page_content(html: str, **_: object) -> str:
    return sphinx_roles_to_code(html)
