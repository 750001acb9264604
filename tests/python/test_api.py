# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shape of the package: the C calls all run without the GIL, the cdef
copies no constant, every public name is documented and typed, and
help(cpuhp) shows them."""
import inspect
import os
import pathlib
import pydoc
import re

import pytest

SOURCE = pathlib.Path(os.environ.get('CPUHP_SOURCE_ROOT',
                                     pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get('CPUHP_BUILD_ROOT', SOURCE / 'build'))
PY = SOURCE / 'bindings' / 'python'
# Each extension: its cdef, and the C that build_cffi.py generated from it.
EXTENSIONS = {
    '_cpuhp': (PY / 'cpuhp.cdef', BUILD / 'bindings' / 'python' / '_cpuhp.c'),
    '_cpuhp_client': (PY / 'cpuhp_client.cdef', BUILD / 'bindings' / 'python' / '_cpuhp_client.c'),
}


def cdef_functions(ext):
    text = re.sub(r'/\*.*?\*/', '', EXTENSIONS[ext][0].read_text(), flags=re.S)
    return set(re.findall(r'\b(cpuhp_\w+)\s*\(', text))


@pytest.mark.parametrize('ext,least', [('_cpuhp', 10), ('_cpuhp_client', 10)])
def test_every_c_call_of_the_extension_releases_the_gil(ext, least):
    """cffi's API mode wraps each call in Py_BEGIN/END_ALLOW_THREADS; this
    holds it to that for every function the cdef declares."""
    wrapped = set(re.findall(r'Py_BEGIN_ALLOW_THREADS\s+_cffi_restore_errno\(\);\s+'
                             r'\{ (?:result = )?(cpuhp_\w+)\(', EXTENSIONS[ext][1].read_text()))
    declared = cdef_functions(ext)
    assert len(declared) > least
    assert declared - wrapped == set()


def test_the_lock_extension_declares_no_client_call():
    assert not any(f.startswith('cpuhp_client') for f in cdef_functions('_cpuhp'))


@pytest.mark.parametrize('ext', EXTENSIONS)
def test_the_cdef_takes_every_constant_and_layout_from_the_headers(ext):
    text = re.sub(r'/\*.*?\*/', '', EXTENSIONS[ext][0].read_text(), flags=re.S)
    assert re.findall(r'#define\s+\w+\s+(?!\.\.\.)\S+', text) == []
    assert re.findall(r'=\s*(?!\.\.\.)[-\w]+\s*,', text) == []  # enum values
    assert re.findall(r'\[\s*\d+\s*\]', text) == []             # array sizes
    for struct in re.findall(r'struct \w+ \{[^}]*\}', text):
        assert '...;' in struct, struct  # partial: the compiler fills the layout


def test_the_extensions_expose_what_the_cdefs_declare(cpuhp):
    from cpuhp._cpuhp import lib
    from cpuhp._cpuhp_client import lib as client_lib
    assert cdef_functions('_cpuhp') <= set(dir(lib))
    assert cdef_functions('_cpuhp_client') <= set(dir(client_lib))
    assert lib.CPUHP_CPUSET_MAX == cpuhp.CPUSET_MAX == 8192
    assert cpuhp.HAVE_CLIENT is True


def test_a_cpuset_of_the_lock_extension_is_one_the_client_takes(cpuhp):
    """ffi.include: struct cpuhp_cpuset is one type in both extensions."""
    from cpuhp._cpuhp import ffi
    from cpuhp._cpuhp_client import ffi as client_ffi
    assert ffi.typeof('struct cpuhp_cpuset *') is client_ffi.typeof('struct cpuhp_cpuset *')


def public_callables(cpuhp):
    for name in cpuhp.__all__:
        obj = getattr(cpuhp, name)
        if inspect.isclass(obj):
            yield name, obj
            for mname, m in vars(obj).items():
                if not mname.startswith('_') and callable(m):
                    yield f'{name}.{mname}', m
        elif callable(obj) and not hasattr(obj, '__origin__'):
            yield name, obj


def test_every_public_name_has_a_docstring(cpuhp):
    assert cpuhp.__doc__ and len(cpuhp.__doc__) > 500
    missing = [n for n, obj in public_callables(cpuhp) if not inspect.getdoc(obj)]
    assert missing == []


def test_public_functions_and_methods_carry_type_hints(cpuhp):
    untyped = []
    for name, obj in public_callables(cpuhp):
        if inspect.isclass(obj):
            continue
        sig = inspect.signature(obj)
        if sig.return_annotation is inspect.Signature.empty:
            untyped.append(name)
        untyped += [f'{name}({p})' for p, v in sig.parameters.items()
                    if p != 'self' and v.annotation is inspect.Parameter.empty]
    assert untyped == []


def test_help_shows_every_public_name_as_cpuhp_dot_name(cpuhp):
    text = pydoc.render_doc(cpuhp, renderer=pydoc.plaintext)
    for name in cpuhp.__all__:
        assert name in text, name
    assert 'cpuhp._client' not in text.split('PACKAGE CONTENTS')[1]
    assert repr(cpuhp.Client).startswith("<class 'cpuhp.Client'")


def test_the_package_is_typed(cpuhp):
    assert (pathlib.Path(cpuhp.__file__).parent / 'py.typed').exists()


@pytest.mark.parametrize('name', ['RWSem', 'Client', 'online_cpus_held', 'hotplug_section',
                                  'parse_cpulist', 'format_cpulist'])
def test_the_issue_s_api_is_there(cpuhp, name):
    assert name in cpuhp.__all__


def test_dir_shows_the_api_and_no_module_or_helper(cpuhp):
    import types
    names = dir(cpuhp)
    assert names == sorted(cpuhp.__all__ + ['__version__', 'aio'])
    assert [n for n in names if isinstance(getattr(cpuhp, n), types.ModuleType)] == ['aio']
    assert '_client' not in names and 'annotations' not in names
    assert cpuhp._client.Client is cpuhp.Client  # still importable for whoever wants it


def test_str_of_an_enum_is_its_name_and_int_its_c_value(cpuhp):
    from cpuhp._cpuhp_client import lib
    for state in cpuhp.WriterState:
        assert str(state) == f'{state}' == state.name
        assert int(state) == getattr(lib, f'CPUHP_CLIENT_WRITER_{state.name}')
    assert f'{cpuhp.WriterState.RUNNING:d}' == str(lib.CPUHP_CLIENT_WRITER_RUNNING)


def c_struct_fields(header, struct):
    body = re.search(r'struct %s \{(.*?)\n\};' % struct, header.read_text(), flags=re.S)[1]
    body = re.sub(r'/\*.*?\*/', '', body, flags=re.S)
    return re.findall(r'(\w+)(?:\[\w*\])?;', body)


def test_status_has_every_field_of_the_c_struct(cpuhp):
    import dataclasses
    header = SOURCE / 'libcpuhp' / 'include' / 'cpuhp' / 'client.h'
    fields = c_struct_fields(header, 'cpuhp_client_status')
    assert 'fast_path' in fields and len(fields) > 10
    assert [f.name for f in dataclasses.fields(cpuhp.Status)] == fields
