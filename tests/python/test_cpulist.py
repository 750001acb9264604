# SPDX-License-Identifier: LGPL-2.1-or-later
"""CPU lists: parse_cpulist/format_cpulist are libcpuhp's parser and
formatter, and every function taking CPUs accepts an int, an iterable or a
range list, refusing anything else with ValueError/TypeError."""
import pytest

from spy import spy_on


def test_parse_reads_the_kernel_range_list_format(cpuhp):
    assert cpuhp.parse_cpulist('0-3,8,10-11') == {0, 1, 2, 3, 8, 10, 11}
    assert cpuhp.parse_cpulist('5\n') == {5}
    assert cpuhp.parse_cpulist('  1,3  ') == {1, 3}
    assert isinstance(cpuhp.parse_cpulist('1'), frozenset)


def test_parse_of_an_empty_list_is_the_empty_set(cpuhp):
    assert cpuhp.parse_cpulist('') == frozenset()
    assert cpuhp.parse_cpulist('\n') == frozenset()


def test_parse_accepts_overlaps_and_repeats_as_the_kernel_does(cpuhp):
    assert cpuhp.parse_cpulist('1-3,2-5,3') == {1, 2, 3, 4, 5}


def test_parse_reads_the_kernels_and_tasksets_strides(cpuhp):
    assert cpuhp.parse_cpulist('0-15:2/4') == {0, 1, 4, 5, 8, 9, 12, 13}
    assert cpuhp.parse_cpulist('0-7:2') == {0, 2, 4, 6}
    assert cpuhp.parse_cpulist('0-7:2,9') == {0, 2, 4, 6, 9}
    assert cpuhp.format_cpulist('0-15:2/4') == '0-1,4-5,8-9,12-13'


@pytest.mark.parametrize('bad', ['0-7:0', '0-7:3/2', ':2', '3:1/2', '0-7:', '0-7:2/'])
def test_parse_refuses_malformed_strides_saying_what_it_wants(cpuhp, bad):
    with pytest.raises(ValueError, match='not a range list such as .*0-15:2/4'):
        cpuhp.parse_cpulist(bad)


def test_a_stride_beyond_cpuset_max_is_out_of_range(cpuhp):
    with pytest.raises(ValueError, match='out of range'):
        cpuhp.parse_cpulist('0-7:8192')


@pytest.mark.parametrize('bad', ['x', '3-1', '1,,2', '-1', '1-', '+1', '0x1', '0-7:3/2',
                                 '1 2', '1\x002', '\u0661', '8192', '0-99999999999999999999'])
def test_parse_refuses_what_is_not_a_range_list_with_valueerror(cpuhp, bad):
    with pytest.raises(ValueError):
        cpuhp.parse_cpulist(bad)


def test_parse_refuses_non_strings_with_typeerror(cpuhp):
    with pytest.raises(TypeError):
        cpuhp.parse_cpulist(b'1-2')
    with pytest.raises(TypeError):
        cpuhp.parse_cpulist(3)


def test_the_highest_cpu_number_is_cpuset_max_minus_one(cpuhp):
    top = cpuhp.CPUSET_MAX - 1
    assert cpuhp.parse_cpulist(str(top)) == {top}
    assert cpuhp.format_cpulist(top) == str(top)
    with pytest.raises(ValueError, match='8192|out of range'):
        cpuhp.format_cpulist(cpuhp.CPUSET_MAX)


def test_format_writes_ranges_from_any_form_of_cpus(cpuhp):
    assert cpuhp.format_cpulist({0, 1, 2, 3, 8}) == '0-3,8'
    assert cpuhp.format_cpulist([11, 10, 8]) == '8,10-11'
    assert cpuhp.format_cpulist(range(4, 8)) == '4-7'
    assert cpuhp.format_cpulist(3) == '3'
    assert cpuhp.format_cpulist(x for x in (1, 2)) == '1-2'
    assert cpuhp.format_cpulist('3,1-2,2') == '1-3'
    assert cpuhp.format_cpulist(()) == ''


def test_format_and_parse_round_trip(cpuhp):
    cpus = {0, 2, 3, 4, 63, 64, 65, 127, 4095, 8191}
    assert cpuhp.parse_cpulist(cpuhp.format_cpulist(cpus)) == cpus


@pytest.mark.parametrize('bad', [-1, [0, -3], range(-2, 2)])
def test_negative_cpu_numbers_are_valueerror(cpuhp, bad):
    with pytest.raises(ValueError, match='negative'):
        cpuhp.format_cpulist(bad)


@pytest.mark.parametrize('bad', [True, [1, 2.0], 1.5, None, b'1', [None], object()])
def test_what_is_not_a_cpu_is_typeerror(cpuhp, bad):
    with pytest.raises(TypeError):
        cpuhp.format_cpulist(bad)


def test_parsing_and_formatting_are_libcpuhps_one_parser_and_formatter(cpuhp, monkeypatch):
    import cpuhp._cpuset as cpuset
    with spy_on(monkeypatch, cpuset) as lib:
        cpuhp.parse_cpulist('1-3')
        cpuhp.format_cpulist({1, 2})
    assert 'cpuhp_cpuset_parse' in lib.calls
    assert 'cpuhp_cpuset_format' in lib.calls
