"""What a new user tries first: ``--version``, ``python -m icepark``, and an example in every
command's ``--help`` that the parser accepts."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import icepark
from icepark.cli.main import EXAMPLES, _parser, main
from tests.cli.conftest import cli_env

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _commands(parser: argparse.ArgumentParser, path: str = "") -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                command = f"{path} {name}".strip()
                yield command
                yield from _commands(sub, command)


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    version = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert icepark.__version__ == version
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"icepark {version}"


def test_python_dash_m_icepark_is_the_command(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "icepark", "--version"], cwd=tmp_path,
                            env=cli_env(tmp_path), capture_output=True, text=True, check=False,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"icepark {icepark.__version__}"


def test_every_command_has_an_example() -> None:
    assert sorted(_commands(_parser())) == sorted(EXAMPLES)


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_each_example_is_shown_in_help_and_parses(command: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    words = command.split()
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    assert f"example:\n  {EXAMPLES[command]}\n" in capsys.readouterr().out
    argv = shlex.split(EXAMPLES[command])
    assert argv[0] == "icepark" and argv[1:len(words) + 1] == words
    if command != "quickstart":  # parsed by the quickstart itself, which --help above showed
        args, extra = _parser().parse_known_args(argv[1:])
        assert extra == [] and callable(args.handler)
