"""Whole-number options of the commands refuse 0, negatives and words in one line (argparse's usage)."""

import pytest
from django.core.management import CommandError, call_command

from judgments.management.arguments import positive_int


@pytest.mark.parametrize("text", ["0", "-3", "x", "1.5", ""])
def test_positive_int_refuses_what_is_not_a_whole_number_of_at_least_one(text):
    with pytest.raises(Exception, match="expected a whole number of at least 1"):
        positive_int(text)


def test_positive_int_reads_whole_numbers():
    assert positive_int("1") == 1
    assert positive_int(" 12 ") == 12


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["judge", "probe_judge"])
def test_the_judges_commands_refuse_a_zero_budget(command):
    with pytest.raises(CommandError, match="--max-calls: expected a whole number of at least 1, not '0'"):
        call_command(command, "--pool", "p", "--judge", "j", "--max-calls", "0")
