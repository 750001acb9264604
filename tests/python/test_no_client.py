# SPDX-License-Identifier: LGPL-2.1-or-later
"""A cpuhp package built without libcpuhp-client (meson -Dclient=disabled
-Dpython=enabled): the in-process part works, the cross-process part is not
there and says so.  Registered only in such a build (tests/build's
lock-only.sh --python configures one); a build with the client runs
test_api.py's HAVE_CLIENT check instead."""
import importlib.util

import pytest


def test_the_client_extension_was_not_built(cpuhp):
    assert cpuhp.HAVE_CLIENT is False
    assert importlib.util.find_spec('cpuhp._cpuhp_client') is None


def test_the_lock_part_works(cpuhp):
    with cpuhp.RWSem().read():
        pass
    with cpuhp.online_cpus_held():
        pass
    assert cpuhp.parse_cpulist('0-2,5') == {0, 1, 2, 5}
    assert cpuhp.format_cpulist({0, 1, 2, 5}) == '0-2,5'


@pytest.mark.parametrize('name', ['Client', 'Status', 'socket_path', 'DEFAULT_SOCKET'])
def test_asking_for_the_client_part_says_it_is_not_in_this_build(cpuhp, name):
    with pytest.raises(ImportError, match=r'built without libcpuhp-client.*-Dclient=enabled'):
        getattr(cpuhp, name)
    with pytest.raises(ImportError, match='built without libcpuhp-client'):
        exec(f'from cpuhp import {name}', {})


def test_the_api_lists_only_what_is_there(cpuhp):
    assert 'Client' not in cpuhp.__all__
    assert {'RWSem', 'online_cpus_held', 'parse_cpulist', 'HAVE_CLIENT'} <= set(cpuhp.__all__)
    assert all(hasattr(cpuhp, n) for n in cpuhp.__all__)


def test_other_missing_names_are_plain_attribute_errors(cpuhp):
    with pytest.raises(AttributeError):
        cpuhp.no_such_name  # noqa: B018


def test_cpuhp_aio_says_it_is_not_in_this_build(cpuhp):
    with pytest.raises(ImportError, match=r'built without libcpuhp-client.*-Dclient=enabled'):
        import cpuhp.aio  # noqa: F401
    with pytest.raises(ImportError, match='built without libcpuhp-client'):
        cpuhp.aio  # noqa: B018
    assert 'aio' not in dir(cpuhp) and dir(cpuhp) == sorted(cpuhp.__all__ + ['__version__'])
