# SPDX-License-Identifier: LGPL-2.1-or-later
"""The libraries' ABI: libcpuhp.so and libcpuhp-client.so export exactly
what their headers declare CPUHP_EXPORT, every symbol under the version
node of the soname, and the version scripts list nothing else.  A new
public function left out of the version script is not exported, and fails
here; so does a stale name in the script, or an internal symbol leaking."""
import re
import subprocess

import pytest

import fixture

INCLUDE = fixture.SOURCE / 'libcpuhp' / 'include' / 'cpuhp'
LIBS = {
    # library: (its headers, its version script, its node)
    'libcpuhp': (sorted(set(INCLUDE.glob('*.h')) - {INCLUDE / 'client.h', INCLUDE / 'socket.h'}),
                 fixture.SOURCE / 'libcpuhp' / 'libcpuhp.map', 'LIBCPUHP_0'),
    'libcpuhp-client': ([INCLUDE / 'client.h', INCLUDE / 'socket.h'],
                        fixture.SOURCE / 'libcpuhp' / 'client' / 'libcpuhp-client.map',
                        'LIBCPUHP_CLIENT_0'),
}


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)


def declared(headers):
    """Names declared CPUHP_EXPORT: the identifier before the parameter list
    of a function, or the last one of a variable (attributes removed)."""
    names = set()
    for h in headers:
        text = strip_comments(h.read_text())
        for decl in re.findall(r'\bCPUHP_EXPORT\b([^;{]*);', text):
            decl = re.sub(r'__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)', ' ', decl)
            m = (re.search(r'(\w+)\s*\(', decl) or re.search(r'(\w+)\s*(?:\[[^]]*\])?\s*$', decl))
            assert m, (h, decl)
            names.add(m[1])
    return names


def scripted(mapfile, node):
    text = strip_comments(mapfile.read_text())
    m = re.fullmatch(r'\s*' + node + r'\s*\{\s*global:(.*?)local:\s*\*\s*;\s*\}\s*;\s*', text, re.S)
    assert m, f'{mapfile}: expected one node {node} with global: names and local: *'
    return set(re.findall(r'(\S+?)\s*;', m[1]))


def exported(lib):
    """Defined dynamic symbols of the built library: {name: version}."""
    so = next((fixture.BUILD / 'libcpuhp').rglob(lib + '.so'))
    out = subprocess.run(['nm', '-D', '--defined-only', str(so)], capture_output=True,
                         text=True, check=True, timeout=fixture.GUARD_S).stdout
    syms = {}
    for line in out.splitlines():
        kind, name = line.split()[-2:]
        if kind == 'A':       # the version node itself
            continue
        name, _, version = name.partition('@@')
        syms[name] = version
    return syms


@pytest.mark.parametrize('lib', sorted(LIBS))
def test_the_library_exports_exactly_its_headers_declarations(lib):
    headers, mapfile, node = LIBS[lib]
    want = declared(headers)
    assert want, headers
    syms = exported(lib)
    assert set(syms) == want, {'exported, not declared': sorted(set(syms) - want),
                               'declared, not exported (add to the version script)':
                                   sorted(want - set(syms))}
    assert set(syms.values()) == {node}, syms


@pytest.mark.parametrize('lib', sorted(LIBS))
def test_the_version_script_lists_the_headers_declarations_and_nothing_else(lib):
    headers, mapfile, node = LIBS[lib]
    want, listed = declared(headers), scripted(mapfile, node)
    assert listed == want, {'in the script, not declared': sorted(listed - want),
                            'declared, not in the script': sorted(want - listed)}


def test_the_inline_headers_abi_symbols_are_named_in_the_script_as_abi():
    text = (INCLUDE / 'rwsem-inline.h').read_text()
    abi = set(re.findall(r'\bcpuhp__inline_abi_\d+\b', text))
    assert len(abi) == 1, abi
    internal = {n for n in declared([INCLUDE / 'rwsem-inline.h']) if n.startswith('cpuhp__')}
    assert abi <= internal
    script = LIBS['libcpuhp'][1].read_text()
    comment = re.search(r'/\*(?:(?!\*/).)*\bABI\b(?:(?!\*/).)*\*/\s*((?:cpuhp__\w+;\s*)+)',
                        script, re.S)
    assert comment and set(re.findall(r'cpuhp__\w+', comment[1])) == internal, \
        'the cpuhp__ symbols must follow the comment that names them ABI'
