# SPDX-License-Identifier: LGPL-2.1-or-later
"""An uncompressed newc ("070701") cpio archive, the format the kernel
unpacks as an initramfs, written from a tar archive (the base root) and
directory trees laid over it (the project's install, the test scripts).

The host has no cpio program; Python's tarfile reads the base root without
root privileges, and its owners, modes and device numbers are kept as
recorded.  Overlay trees are written as owned by root, and laid over the
root as dpkg would: through its symbolic links (bookworm's /lib is one to
usr/lib, so a unit installed into /lib/systemd/system lands in
/usr/lib/systemd/system).  A path given twice is written once, the last
source winning, so the kernel never has to replace one entry by another of
a different type.
"""
import os
import stat
import tarfile

_TRAILER = 'TRAILER!!!'


class _Entry:
    __slots__ = ('mode', 'uid', 'gid', 'mtime', 'rdev', 'data')

    def __init__(self, mode, uid=0, gid=0, mtime=0, rdev=(0, 0), data=b''):
        self.mode, self.uid, self.gid, self.mtime, self.rdev = mode, uid, gid, mtime, rdev
        # bytes, a callable returning bytes (read when written), or a symlink target
        self.data = data


class Archive:
    """Entries by path (no leading '/' or './'), in the order first given."""

    def __init__(self):
        self.entries = {}

    def add_tar(self, path):
        """Every member of the tar archive at @path (hard links become copies)."""
        tar = tarfile.open(path)  # kept open: file data is read when written
        members = {}
        for m in tar:
            name = _norm(m.name)
            if not name:
                continue
            members[name] = m
            target = m
            if m.islnk():
                target = members.get(_norm(m.linkname))
                if target is None or not target.isreg():
                    raise ValueError(f'{path}: hard link {m.name} to an unknown file')
            self.entries[name] = _from_tarinfo(tar, m, target)

    def add_tree(self, root, prefix=''):
        """The tree under @root (a directory), at @prefix in the archive, owned by root."""
        root = os.fspath(root)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel = os.path.relpath(dirpath, root)
            base = _norm(os.path.join(prefix, rel)) if rel != '.' else _norm(prefix)
            if base:
                self._add_path(base, dirpath)
            for name in sorted(filenames) + [d for d in dirnames
                                             if os.path.islink(os.path.join(dirpath, d))]:
                self._add_path(_norm(os.path.join(base, name)), os.path.join(dirpath, name))

    def add_file(self, name, data, mode=0o644):
        self._put(name, _Entry(stat.S_IFREG | mode, data=data))

    def add_symlink(self, name, target):
        self._put(name, _Entry(stat.S_IFLNK | 0o777, data=target.encode()))

    def mkdirs(self, name):
        """@name and its parents as directories, through symbolic links to directories."""
        name = self.resolve(name, follow_last=True)
        parts = [p for p in name.split('/') if p]
        for i in range(1, len(parts) + 1):
            path = '/'.join(parts[:i])
            if path not in self.entries:
                self.entries[path] = _Entry(stat.S_IFDIR | 0o755)

    def resolve(self, name, follow_last=False):
        """@name with every symbolic link among its parents (and itself if
        @follow_last) replaced by its target, as a path lookup would."""
        parts = [p for p in _norm(name).split('/') if p]
        done = []
        hops = 0
        while parts:
            p = parts.pop(0)
            path = '/'.join(done + [p])
            e = self.entries.get(path)
            if e is not None and stat.S_ISLNK(e.mode) and (parts or follow_last):
                hops += 1
                if hops > 40:
                    raise ValueError(f'{name}: too many levels of symbolic links')
                target = e.data.decode()
                base = '' if target.startswith('/') else '/'.join(done)
                parts = [q for q in _norm(base + '/' + target).split('/') if q] + parts
                done = []
                continue
            done.append(p)
        return '/'.join(done)

    def remove_under(self, prefix):
        """Drop @prefix and everything under it (documentation the guest never reads)."""
        prefix = _norm(prefix)
        for name in [n for n in self.entries if n == prefix or n.startswith(prefix + '/')]:
            del self.entries[name]

    def write(self, path):
        """Write the archive to @path; return its size in bytes."""
        with open(path, 'wb') as out:
            # Parents before children: the kernel creates each entry as it comes.
            for ino, name in enumerate(sorted(self.entries, key=lambda n: n.split('/')), 1):
                _write_entry(out, ino, name, self.entries[name])
            _write_entry(out, 0, _TRAILER, _Entry(0))
            return out.tell()

    def _add_path(self, name, path):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            e = _Entry(st.st_mode, data=os.readlink(path).encode())
        elif stat.S_ISREG(st.st_mode):
            e = _Entry(st.st_mode, data=lambda p=path: _read(p))
        elif stat.S_ISDIR(st.st_mode):
            e = _Entry(st.st_mode)
        else:
            raise ValueError(f'{path}: not a file, directory or symbolic link')
        e.mtime = int(st.st_mtime)
        self._put(name, e)

    def _put(self, name, e):
        """Lay @e at @name over what is there: through symbolic links among its
        parents, and through one at @name itself when @e is a directory."""
        name = _norm(name)
        self.mkdirs(os.path.dirname(name))
        name = self.resolve(name, follow_last=stat.S_ISDIR(e.mode))
        old = self.entries.get(name)
        if stat.S_ISDIR(e.mode) and old is not None and stat.S_ISDIR(old.mode):
            return  # an existing directory keeps its owner and mode
        self.entries[name] = e


def _norm(name):
    name = os.path.normpath('/' + name).lstrip('/')
    return '' if name == '.' else name


def _read(path):
    with open(path, 'rb') as f:
        return f.read()


def _from_tarinfo(tar, m, data_member):
    kinds = {tarfile.REGTYPE: stat.S_IFREG, tarfile.AREGTYPE: stat.S_IFREG,
             tarfile.LNKTYPE: stat.S_IFREG, tarfile.DIRTYPE: stat.S_IFDIR,
             tarfile.SYMTYPE: stat.S_IFLNK, tarfile.CHRTYPE: stat.S_IFCHR,
             tarfile.BLKTYPE: stat.S_IFBLK, tarfile.FIFOTYPE: stat.S_IFIFO}
    if m.type not in kinds:
        raise ValueError(f'{m.name}: tar member of type {m.type!r} has no cpio form')
    e = _Entry(kinds[m.type] | (m.mode & 0o7777), m.uid, m.gid, int(m.mtime))
    if m.issym():
        e.data = m.linkname.encode()
    elif m.isreg() or m.islnk():
        e.data = lambda: tar.extractfile(data_member).read()
    elif m.ischr() or m.isblk():
        e.rdev = (m.devmajor, m.devminor)
    return e


def _write_entry(out, ino, name, e):
    data = e.data() if callable(e.data) else e.data
    if stat.S_ISDIR(e.mode) or stat.S_ISCHR(e.mode) or stat.S_ISBLK(e.mode) or \
            stat.S_ISFIFO(e.mode):
        data = b''
    bname = name.encode() + b'\0'
    fields = (ino, e.mode, e.uid, e.gid, 2 if stat.S_ISDIR(e.mode) else 1, e.mtime, len(data),
              0, 0, e.rdev[0], e.rdev[1], len(bname), 0)
    header = b'070701' + b''.join(b'%08X' % (f & 0xFFFFFFFF) for f in fields)
    out.write(header + bname + _pad(len(header) + len(bname)))
    out.write(data + _pad(len(data)))


def _pad(n):
    return b'\0' * (-n % 4)
