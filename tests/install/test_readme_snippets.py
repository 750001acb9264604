# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every C snippet of README.md and doc/*.md compiles against the built
libraries and runs clean: what a new user copies first must work.

The convention, for whoever writes a snippet:

- a ```c block with a main() is a program.  It is built as a user would
  build it, `cc $(pkg-config --cflags --libs libcpuhp libcpuhp-client)`
  (the build tree's uninstalled .pc files), with -Wall -Wextra -Werror,
  and run under valgrind's memcheck, where any error (an uninitialised
  read, a bad free, ...) or a definite leak fails it; without valgrind it
  runs bare, and the test says so.  A program that includes
  <cpuhp/client.h> runs twice: against a cpuhpd on a simulated tree
  ($CPUHP_SOCKET), where it must exit 0, and with no cpuhpd there, where
  it must exit 1 and name the socket's path on stderr (the README's
  first snippet is a user's first failure: it must say where it looked);
- any other ```c block is a fragment, compiled (not run) after
  <cpuhp/cpuhp.h> and <cpuhp/client.h> (and <errno.h>, <stdio.h>,
  <stdlib.h>, <string.h>): as statements inside a function, or failing
  that as declarations and definitions of their own.

A README whose client program reads its handle when connect() failed (a
mutant copy, below) fails this test: valgrind sees the read.
"""
import os
import re
import shutil
import subprocess

import pytest

import fixture

CC = os.environ.get('CC', 'cc')
DOCS = [fixture.SOURCE / 'README.md', *sorted((fixture.SOURCE / 'doc').glob('*.md'))]
CFLAGS = ['-std=gnu11', '-Wall', '-Wextra', '-Werror', '-O0', '-g']
VALGRIND = shutil.which('valgrind')
# Errors exit 99; a definite leak is an error.  --child-silent-after-fork:
# a program that forks is judged by its own process.
VALGRIND_ARGS = ['--error-exitcode=99', '--leak-check=full', '--errors-for-leak-kinds=definite',
                 '--track-origins=yes', '--child-silent-after-fork=yes', '-q']
FENCE = re.compile(r'^```c[ \t]*\n(.*?)^```[ \t]*$', re.M | re.S)
INCLUDES = ('#include <cpuhp/cpuhp.h>\n#include <cpuhp/client.h>\n#include <errno.h>\n'
            '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n')
# A fragment of statements, or one of declarations and definitions.
WRAPS = [(INCLUDES + 'void snippet(void);\nvoid snippet(void)\n{\n', '}\n'), (INCLUDES, '')]


def snippets(path):
    """(line, code) of each ```c block of the Markdown file @path."""
    text = path.read_text()
    return [(text.count('\n', 0, m.start()) + 1, m[1]) for m in FENCE.finditer(text)]


def run(argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=fixture.GUARD_S * 4, **kw)


def pkg_flags():
    env = dict(os.environ, PKG_CONFIG_PATH=str(fixture.BUILD / 'meson-uninstalled'))
    r = run(['pkg-config', '--cflags', '--libs', 'libcpuhp', 'libcpuhp-client'], env=env)
    assert r.returncode == 0, r.stderr
    flags = r.stdout.split()
    # The build tree's libraries, not an installed copy.
    assert any(f.startswith(f'-L{fixture.BUILD}') for f in flags), flags
    return flags


def compile_(src, out, code, link):
    src.write_text(code)
    argv = [CC, *CFLAGS, str(src), *([] if link else ['-c']), '-o', str(out), *pkg_flags()]
    r = run(argv)
    return r.stderr if r.returncode else None


def build(tmp, name, code, fragment):
    """Return: the program (or object), and None or why it does not compile."""
    src, out = tmp / f'{name}.c', tmp / name
    if not fragment:
        err = compile_(src, out, code, True)
        return out, err and f'does not compile:\n{err}'
    errs = []
    for head, tail in WRAPS:
        err = compile_(src, out, head + code + tail, False)
        if not err:
            return out, None
        errs.append(err)
    return out, 'does not compile, as statements:\n{}\nnor as definitions:\n{}'.format(*errs)


def execute(prog, env):
    """Run @prog (under valgrind when there is one).  Return: the CompletedProcess."""
    argv = [VALGRIND, *VALGRIND_ARGS, prog] if VALGRIND else [prog]
    return run(argv, env=env)


def verdict(r):
    """What valgrind said: its exit code for errors, or a report of its own
    before a signal killed the program."""
    found = VALGRIND and (r.returncode == 99 or re.search(r'^==\d+== \S', r.stderr, re.M))
    return ' (valgrind found errors)' if found else ''


def check_doc(path, tmp, socket_path):
    """Every problem of @path's C snippets, as strings: [] when all are right.
    @socket_path: a cpuhpd's socket for the client programs."""
    problems = []
    for line, code in snippets(path):
        where = f'{path.name}:{line}'
        program = re.search(r'\bint\s+main\s*\(', code) is not None
        name = f'snippet-{line}'
        prog, err = build(tmp, name, code, not program)
        if err:
            problems.append(f'{where}: {err}')
            continue
        if not program:
            continue
        env = dict(os.environ, CPUHP_SOCKET=str(socket_path))
        r = execute(prog, env)
        if r.returncode != 0:
            problems.append(f'{where}: exit {r.returncode}{verdict(r)}:\n{r.stdout}{r.stderr}')
        if '<cpuhp/client.h>' not in code:
            continue
        absent = tmp / 'no-cpuhpd-here.sock'
        r = execute(prog, dict(os.environ, CPUHP_SOCKET=str(absent)))
        if r.returncode != 1 or str(absent) not in r.stderr:
            problems.append(f'{where}: with no cpuhpd at {absent}, exit {r.returncode} (want 1 '
                            f'and the path on stderr){verdict(r)}:\n{r.stdout}{r.stderr}')
    return problems


@pytest.fixture
def daemon(tmp, sim):
    d = fixture.Daemon(tmp, sim.root).start()
    yield d
    d.stop_clean()


@pytest.mark.parametrize('doc', DOCS, ids=[p.name for p in DOCS])
def test_every_c_snippet_builds_and_runs_clean(doc, tmp, daemon):
    if not VALGRIND:
        print('valgrind not found: the programs run bare (run.sh installs it)')
    problems = check_doc(doc, tmp, daemon.socket)
    assert problems == [], '\n'.join(problems)


def test_the_readme_has_a_lock_program_and_a_client_program():
    codes = [code for _, code in snippets(fixture.SOURCE / 'README.md')]
    programs = [c for c in codes if re.search(r'\bint\s+main\s*\(', c)]
    assert any('<cpuhp/client.h>' in c for c in programs), 'no client program: test nothing?'
    assert any('<cpuhp/client.h>' not in c for c in programs), 'no lock program'


def mutant(tmp, pattern, repl, count=1):
    """A copy of README.md with @pattern (a regex that must match) replaced by
    @repl, @count times (0: everywhere)."""
    text = (fixture.SOURCE / 'README.md').read_text()
    out, n = re.subn(pattern, repl, text, count=count, flags=re.S)
    assert n >= 1, f'the README has no {pattern!r} to mutate: has its client program changed?'
    path = tmp / 'README.md'
    path.write_text(out)
    return path


@pytest.mark.skipif(not VALGRIND, reason='valgrind is what sees the uninitialised read')
def test_a_snippet_that_reads_an_unset_handle_fails(tmp, daemon):
    """The bug this test was written for: the failure path of connect() used
    the handle connect() never set.  The compiler cannot see it (the
    handle's address went to connect()); valgrind does."""
    # The first statement of the block after a failed connect(&H) now reads H.
    path = mutant(tmp, r'(cpuhp_client_connect\([^;]*&(\w+)\);.*?\n(\s*)if \(\w+\) \{[^\n]*\n)',
                  r'\1\3        fprintf(stderr, "%s\\n", cpuhp_client_last_message(\2));\n')
    problems = check_doc(path, tmp, daemon.socket)
    assert len(problems) == 1 and 'with no cpuhpd' in problems[0], problems
    assert 'valgrind found errors' in problems[0] and 'uninitialised' in problems[0], problems


def test_a_snippet_that_does_not_name_the_socket_fails(tmp, daemon):
    path = mutant(tmp, r'cpuhp_client_socket_path\(\)', '"?"', count=0)
    problems = check_doc(path, tmp, daemon.socket)
    assert len(problems) == 1 and 'want 1 and the path on stderr' in problems[0], problems


def test_a_fragment_is_compiled(tmp, daemon):
    path = tmp / 'frag.md'
    path.write_text('```c\nstruct cpuhp_rwsem *s;\nif (cpuhp_rwsem_new(&s) == 0)\n'
                    '        cpuhp_rwsem_free(s);\n```\n\n'
                    '```c\nint f(void);\nint f(void) { return cpuhp_rwsem_new(NULL); }\n```\n\n'
                    '```c\nundeclared_call();\n```\n')
    problems = check_doc(path, tmp, daemon.socket)
    assert len(problems) == 1 and problems[0].startswith('frag.md:12: does not compile'), problems
    assert 'undeclared_call' in problems[0]
