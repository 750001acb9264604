#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The README stays a front page and the documentation's links hold.

- README.md has at most MAX_README_LINES lines, and an "Install and deploy"
  section that names each step of a deployment;
- every relative link and image in README.md and doc/*.md names a file or
  folder that exists, and a #fragment into a Markdown file names one of its
  headings (GitHub's anchors).

Usage: docs.py SOURCE_ROOT.  Prints every problem, exits 1 if there is one."""
import pathlib
import re
import sys

MAX_README_LINES = 350
# What a reader of "Install and deploy" must find, in the words of the
# commands themselves.
INSTALL_STEPS = ['--prefix=/usr', 'meson install', '--destdir', 'systemd-sysusers',
                 'systemctl enable --now cpuhpd.socket', 'cpuhp-admin', 'usermod -aG cpuhp',
                 'cpuhpctl status', '/etc/cpuhpd.conf']

LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+"[^"]*")?\)')
FENCE = re.compile(r'^```.*?^```[ \t]*$', re.M | re.S)
CODE_SPAN = re.compile(r'(`+)(?!`).*?(?<!`)\1(?!`)', re.S)


def prose(text):
    """The text without fenced code blocks, where [x](y) is not a link."""
    return FENCE.sub('', text)


def anchors(path):
    """GitHub's heading anchors of a Markdown file: lower case, punctuation
    but '-' and '_' dropped, spaces to '-', '-N' for repeats."""
    seen, out = {}, set()
    for line in prose(path.read_text()).splitlines():
        m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
        if not m:
            continue
        slug = re.sub(r'[^\w\- ]', '', m[1].lower()).replace(' ', '-')
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f'{slug}-{n}')
    return out


def link_problems(root, md):
    problems = []
    text = prose(md.read_text())
    for m in LINK.finditer(CODE_SPAN.sub(lambda s: ' ' * len(s[0]), text)):
        target = m[1]
        if re.match(r'[a-z][a-z0-9+.-]*:', target):      # https:, mailto:, man:
            continue
        line = text.count('\n', 0, m.start()) + 1
        where = f'{md.relative_to(root)}:{line}: {target}'
        path, _, frag = target.partition('#')
        dest = (md.parent / path).resolve() if path else md.resolve()
        if not dest.exists():
            problems.append(f'{where}: no such file {dest}')
        elif frag and dest.suffix == '.md' and frag not in anchors(dest):
            problems.append(f'{where}: {dest.relative_to(root.resolve())} has no heading '
                            f'with the anchor #{frag}')
        elif root.resolve() not in dest.parents and dest != root.resolve():
            problems.append(f'{where}: points outside the source tree')
    return problems


def readme_problems(root):
    readme = root / 'README.md'
    lines = readme.read_text().splitlines()
    problems = []
    if len(lines) > MAX_README_LINES:
        problems.append(f'README.md has {len(lines)} lines, more than {MAX_README_LINES}: '
                        'move details to doc/ and link them')
    sec = re.search(r'^## Install and deploy\s*$(.*?)(?=^## |\Z)', readme.read_text(), re.M | re.S)
    if not sec:
        problems.append('README.md has no "## Install and deploy" section')
    else:
        problems += [f'README.md\'s "Install and deploy" does not say {step!r}'
                     for step in INSTALL_STEPS if step not in sec[1]]
    return problems


def main():
    root = pathlib.Path(sys.argv[1])
    docs = [root / 'README.md'] + sorted((root / 'doc').glob('*.md'))
    problems = readme_problems(root)
    for md in docs:
        problems += link_problems(root, md)
    for p in problems:
        print(p)
    print(f'{len(docs)} files checked, README.md {len((root / "README.md").read_text().splitlines())} '
          f'lines, {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
