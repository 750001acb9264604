# SPDX-License-Identifier: LGPL-2.1-or-later
"""The guest's image, from Debian's archive and the project's own install.

- the kernel: Debian's, the linux-image-*-amd64 package that
  linux-image-amd64 depends on (apt-get download, its vmlinuz alone kept);
- the base root: bookworm from mmdebstrap --variant=apt with the packages
  listed in tests/guest/packages, as a tar archive (owners and device
  nodes kept, no root needed to read it);
- the project: `meson setup --prefix=/usr` of this source tree (a build
  dir of its own inside the test build dir, rebuilt incrementally) and
  `meson install --destdir`, as a package would, laid over the root;
- the test rig (tests/guest/rig/): the unit that runs the scenarios at
  boot, their scripts, and the kernel's cpu-on-off selftest script where
  `image.py fetch` (run.sh) put it in the cache;
packed as one uncompressed newc cpio, the guest's initramfs.

The kernel, the base root and the selftest script are kept in a cache
outside the source tree ($CPUHP_GUEST_CACHE, else /var/cache/libcpuhp-guest
for root, else $XDG_CACHE_HOME/libcpuhp-guest), each under a name made of
what it was built from; the project's install goes on top at every run.

    image.py fetch            fill the cache: the kernel, the base root and the
                              selftest script (run.sh, before the tests)
    image.py build BUILDDIR   build the image as the tests do, print its paths
"""
import contextlib
import fcntl
import hashlib
import lzma
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import newc

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = pathlib.Path(os.environ.get('CPUHP_SOURCE_ROOT', HERE.parents[1]))
SUITE = 'bookworm'
# Pages nobody reads in the guest, left out at unpacking: a smaller cpio
# unpacks faster at every boot.
PATH_EXCLUDES = ['/usr/share/doc/*', '/usr/share/man/*', '/usr/share/locale/*',
                 '/usr/share/info/*', '/usr/lib/udev/hwdb.d/*']
SELFTEST = 'tools/testing/selftests/cpu-hotplug/cpu-on-off-test.sh'
# Where the image puts what the scenarios run (tests/guest/rig/ is laid at /).
SELFTEST_IN_GUEST = 'usr/lib/cpuhp-guest/kselftest/cpu-on-off-test.sh'
# The guest's persistent disk: the kernel's modules for a virtio-blk disk
# with ext4, and the overlay laid on /etc (Debian builds them all as
# modules), loaded by the guest's first process (persist-init.c) in this
# order: each after those it needs.
DISK_MODULES = ['virtio_ring', 'virtio', 'virtio_pci_modern_dev', 'virtio_pci_legacy_dev',
                'virtio_pci', 'virtio_blk', 'crc16', 'mbcache', 'jbd2', 'crc32c_generic', 'ext4',
                'overlay']
MODULES_IN_GUEST = 'usr/lib/cpuhp-guest/modules'
INIT_IN_GUEST = 'usr/lib/cpuhp-guest/init'


class Error(Exception):
    """The image cannot be built: the message says why and what to do."""


def log(msg):
    print(f'guest image: {msg}', file=sys.stderr, flush=True)


def cache_dir():
    env = os.environ.get('CPUHP_GUEST_CACHE')
    if env:
        d = pathlib.Path(env)
    elif os.geteuid() == 0:
        d = pathlib.Path('/var/cache/libcpuhp-guest')
    else:
        xdg = os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache')
        d = pathlib.Path(xdg) / 'libcpuhp-guest'
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def cache_lock(cache):
    """One builder of the cache at a time (two build dirs may test at once)."""
    with open(cache / 'lock', 'w') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run(argv, **kw):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise Error(f'{" ".join(map(str, argv))} failed ({r.returncode}):\n'
                    f'{r.stdout}{r.stderr}')
    return r.stdout


def candidate(package):
    """The version apt would install of @package, or an Error saying how to get one."""
    out = run(['apt-cache', 'policy', package])
    m = re.search(r'Candidate:\s*(\S+)', out)
    if not m or m.group(1) == '(none)':
        raise Error(f'apt knows no version of {package}: run "apt-get update" (Debian '
                    f'bookworm main must be in the sources)')
    return m.group(1)


@contextlib.contextmanager
def package_data(cache, package, version):
    """The data archive of @package=@version, fetched by apt-get, as a tar stream
    (members in order, each read once)."""
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        os.chmod(tmp, 0o755)  # apt-get's _apt user downloads into it
        run(['apt-get', 'download', '-q', f'{package}={version}'], cwd=tmp)
        debs = list(pathlib.Path(tmp).glob(f'{package}_*.deb'))
        if len(debs) != 1:
            raise Error(f'apt-get download {package}={version} left {debs}')
        proc = subprocess.Popen(['dpkg-deb', '--fsys-tarfile', str(debs[0])],
                                stdout=subprocess.PIPE)
        try:
            with tarfile.open(fileobj=proc.stdout, mode='r|') as tar:
                yield tar
        finally:
            proc.stdout.close()
            proc.kill()
            proc.wait()


def find_member(tar, pattern):
    """The first regular file of the tar stream @tar whose path matches @pattern, or None."""
    for m in tar:
        if m.isreg() and re.fullmatch(pattern, m.name.lstrip('./')):
            return m
    return None


def kernel_package():
    """The kernel package linux-image-amd64 depends on, and the version apt would take."""
    out = run(['apt-cache', 'depends', 'linux-image-amd64'])
    names = re.findall(r'Depends:\s*(linux-image-\S+-amd64)\b', out)
    if not names:
        raise Error('apt-cache depends linux-image-amd64 names no kernel: run '
                    '"apt-get update"')
    return names[0], candidate(names[0])


def kernel(cache):
    """The vmlinuz of linux-image-amd64's kernel and the directory of its
    DISK_MODULES, downloaded once."""
    package, version = kernel_package()
    d = cache / 'kernel' / f'{package}_{version}'
    path, mods = d / 'vmlinuz', d / 'modules'
    if path.exists() and all((mods / f'{m}.ko').exists() for m in DISK_MODULES):
        return path, mods
    t0 = time.monotonic()
    data, ko = None, {}
    pattern = r'boot/vmlinuz-.*|lib/modules/[^/]+/kernel/.*/(' + '|'.join(DISK_MODULES) + r')\.ko'
    with package_data(cache, package, version) as tar:
        for m in tar:
            if not m.isreg() or not re.fullmatch(pattern, m.name.lstrip('./')):
                continue
            if m.name.endswith('.ko'):
                ko[pathlib.PurePath(m.name).name] = tar.extractfile(m).read()
            else:
                data = tar.extractfile(m).read()
    if data is None:
        raise Error(f'{package} {version} holds no boot/vmlinuz-*')
    missing = set(DISK_MODULES) - {n[:-3] for n in ko}
    if missing:
        raise Error(f'{package} {version} holds no module {sorted(missing)}')
    mods.mkdir(parents=True, exist_ok=True)
    for name, blob in ko.items():
        (mods / name).write_bytes(blob)
    (d / 'vmlinuz.tmp').write_bytes(data)
    os.replace(d / 'vmlinuz.tmp', path)
    log(f'kernel {package} {version}: downloaded in {time.monotonic() - t0:.1f} s')
    return path, mods


def packages():
    lines = (HERE / 'packages').read_text().splitlines()
    return [p for p in (line.split('#')[0].strip() for line in lines) if p]


def mmdebstrap_args(pkgs):
    args = ['--variant=apt', '--include=' + ','.join(pkgs)]
    args += [f'--dpkgopt=path-exclude={p}' for p in PATH_EXCLUDES]
    return args + [SUITE]


def base_root(cache):
    """The path of the base root's tar archive, built once for this package list."""
    args = mmdebstrap_args(packages())
    key = hashlib.sha256('\0'.join(args).encode()).hexdigest()[:16]
    path = cache / f'root-{key}.tar'
    if path.exists():
        return path
    if not shutil.which('mmdebstrap'):
        raise Error('mmdebstrap is not installed: apt-get install mmdebstrap (run.sh does)')
    t0 = time.monotonic()
    tmp = path.with_suffix('.tmp.tar')
    r = subprocess.run(['mmdebstrap', '--quiet', *args, str(tmp)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise Error(f'mmdebstrap {" ".join(args)} failed:\n{r.stdout}{r.stderr}')
    os.replace(tmp, path)
    for old in cache.glob('root-*.tar'):  # those of earlier package lists
        if old != path:
            old.unlink()
    log(f'base root {path.name}: mmdebstrap took {time.monotonic() - t0:.1f} s')
    return path


def selftest_script(cache):
    """The cached cpu-on-off-test.sh and the linux-source version it came from, or None."""
    d = cache / 'kselftest'
    script, version = d / 'cpu-on-off-test.sh', d / 'version'
    if script.exists() and version.exists():
        return script, version.read_text().strip()
    return None


def fetch_selftest(cache):
    """Take cpu-on-off-test.sh from Debian's linux-source of the guest's kernel series."""
    series = re.match(r'linux-image-(\d+\.\d+)\.', kernel_package()[0])
    package = f'linux-source-{series.group(1)}'
    version = candidate(package)
    have = selftest_script(cache)
    if have and have[1] == f'{package} {version}':
        return have[0]
    t0 = time.monotonic()
    data = None
    # The source tarball inside the package is xz: streamed, never unpacked
    # (about a GB), and left at the script.
    with package_data(cache, package, version) as outer:
        m = find_member(outer, r'usr/src/linux-source-[^/]*\.tar\.xz')
        if m is not None:
            with lzma.open(outer.extractfile(m)) as xz, \
                    tarfile.open(fileobj=xz, mode='r|') as tar:
                m = find_member(tar, r'[^/]+/' + re.escape(SELFTEST))
                data = tar.extractfile(m).read() if m else None
    if data is None:
        raise Error(f'{package} {version} has no {SELFTEST}')
    d = cache / 'kselftest'
    d.mkdir(exist_ok=True)
    (d / 'cpu-on-off-test.sh').write_bytes(data)
    (d / 'version').write_text(f'{package} {version}\n')
    log(f'{SELFTEST} from {package} {version} in {time.monotonic() - t0:.1f} s')
    return d / 'cpu-on-off-test.sh'


def install_project(build_root):
    """`meson install` of this source tree with --prefix=/usr into a fresh destdir."""
    bdir = build_root / 'tests' / 'guest' / 'usr-build'
    dest = build_root / 'tests' / 'guest' / 'destdir'
    t0 = time.monotonic()
    if not (bdir / 'build.ninja').exists():
        shutil.rmtree(bdir, ignore_errors=True)
        run(['meson', 'setup', bdir, SOURCE, '--prefix=/usr', '-Dtests=disabled',
             '-Dpython=disabled', '-Ddaemon=enabled', '-Ddebug_checks=true'])
    run(['ninja', '-C', bdir])
    shutil.rmtree(dest, ignore_errors=True)
    run(['meson', 'install', '-C', bdir, '--no-rebuild', '--destdir', dest])
    log(f'meson install --prefix=/usr: {time.monotonic() - t0:.1f} s')
    return dest


def build_init(build_root):
    """persist-init.c built static (the image's libc is not the host's); its bytes."""
    out = build_root / 'tests' / 'guest' / 'persist-init'
    src = HERE / 'persist-init.c'
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        run([os.environ.get('CC', 'cc'), '-static', '-O2', '-Wall', '-Werror', '-o', out, src])
    return out.read_bytes()


def check_needed(archive, dest):
    """Every library the installed programs link is in the image, or say which is not."""
    have = {pathlib.PurePath(n).name for n in archive.entries
            if re.match(r'(usr/)?lib/x86_64-linux-gnu/[^/]+$', n)}
    missing = set()
    for f in dest.rglob('*'):
        if f.is_file() and not f.is_symlink() and f.read_bytes()[:4] == b'\x7fELF':
            out = run(['readelf', '-d', f])
            missing |= set(re.findall(r'\(NEEDED\).*\[(.+)\]', out)) - have
    if missing:
        raise Error(f'the image lacks {sorted(missing)}, which the install links: add their '
                    f'packages to tests/guest/packages')


def build(build_root, rig_overrides=None):
    """Build the image; return (vmlinuz path, cpio path, selftest version or None)."""
    build_root = pathlib.Path(build_root)
    cache = cache_dir()
    with cache_lock(cache):
        vmlinuz, modules = kernel(cache)
        root = base_root(cache)
        selftest = selftest_script(cache)
    dest = install_project(build_root)
    t0 = time.monotonic()
    archive = newc.Archive()
    archive.add_tar(root)
    archive.add_tree(dest)
    check_needed(archive, dest)
    archive.add_tree(HERE / 'rig')
    archive.add_file(INIT_IN_GUEST, build_init(build_root), 0o755)
    for i, m in enumerate(DISK_MODULES):
        archive.add_file(f'{MODULES_IN_GUEST}/{i:02}-{m}.ko', (modules / f'{m}.ko').read_bytes())
    # The rig's unit starts at boot; the login prompt on the console would
    # only cost time.
    archive.add_symlink('etc/systemd/system/multi-user.target.wants/cpuhp-guest.service',
                        '/etc/systemd/system/cpuhp-guest.service')
    archive.add_symlink('etc/systemd/system/serial-getty@ttyS0.service', '/dev/null')
    for name, data in (rig_overrides or {}).items():
        archive.add_file(name, data)
    if selftest:
        archive.add_file(SELFTEST_IN_GUEST, selftest[0].read_bytes(), 0o755)
        archive.add_file(SELFTEST_IN_GUEST + '.version', selftest[1].encode() + b'\n')
    out = build_root / 'tests' / 'guest' / 'root.cpio'
    size = archive.write(out)
    log(f'{out.name}: {size / 2**20:.0f} MiB packed in {time.monotonic() - t0:.1f} s')
    return vmlinuz, out, selftest[1] if selftest else None


def main(argv):
    try:
        if argv[1:] == ['fetch']:
            cache = cache_dir()
            with cache_lock(cache):
                kernel(cache)
                base_root(cache)
                fetch_selftest(cache)
            return 0
        if len(argv) == 3 and argv[1] == 'build':
            print(*build(argv[2]), sep='\n')
            return 0
    except Error as e:
        print(f'image.py: {e}', file=sys.stderr)
        return 1
    print(__doc__.split('\n\n')[-1], file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
