"""Sphinx extension: the command-line reference, generated from crossdyn's argument parser.

The directive ``{crossdyn-cli}`` walks ``crossdyn.experiments.core.cli.build_parser()``
and its subcommands, however deep, and writes one section per command: its usage
line as argparse prints it, what it does, and every argument and option with its
help text and choices.  A command or option added to the parser appears in the
documentation with no edit to it.
"""

from __future__ import annotations

import argparse
import os
from contextlib import contextmanager

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

USAGE_WIDTH = "78"  # columns argparse wraps the usage at (it reads $COLUMNS): the page's text width


@contextmanager
def _columns(width: str):
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _subcommands(parser: argparse.ArgumentParser):
    """``(name, help, subparser)`` of each subcommand, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # aliases name the same parser
                    seen.add(id(sub))
                    yield name, helps.get(name), sub


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        choices = ", ".join(str(c) for c in action.choices)
        text = f"{text} (choices: {choices})" if text else f"one of: {choices}"
    return text


def _term(action: argparse.Action) -> str:
    if not action.option_strings:  # a positional argument
        return action.metavar or action.dest
    if action.nargs == 0:  # a flag
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    return ", ".join(f"{opt} {metavar}" for opt in action.option_strings)


class CliDirective(SphinxDirective):
    """``{crossdyn-cli}``: one section per crossdyn command."""

    def run(self):
        from crossdyn.experiments.core.cli import build_parser

        return self._sections(build_parser(), "crossdyn", None)

    def _sections(self, parser: argparse.ArgumentParser, command: str, summary: str | None) -> list[nodes.Node]:
        section = nodes.section(ids=[nodes.make_id(f"cli {command}")], names=[nodes.fully_normalize_name(command)])
        section += nodes.title(command, "", nodes.literal(command, command))
        with _columns(USAGE_WIDTH):
            usage = parser.format_usage().strip().removeprefix("usage: ")
        section += nodes.literal_block(usage, usage, language="text")
        for text in (summary, parser.description):
            if text:
                section += nodes.paragraph(text=text)
        items = nodes.definition_list()
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            term = _term(action)
            item = nodes.definition_list_item()
            item += nodes.term("", "", nodes.literal(term, term))
            item += nodes.definition("", nodes.paragraph(text=_help(parser, action) or "(no help text)"))
            items += item
        if len(items):
            section += items
        subs = list(_subcommands(parser))
        if subs:
            listing = nodes.bullet_list()
            for name, text, _ in subs:
                line = nodes.paragraph()
                line += nodes.literal(f"{command} {name}", f"{command} {name}")
                line += nodes.Text(f": {text}" if text else "")
                listing += nodes.list_item("", line)
            section += listing
        if parser.epilog:
            section += nodes.literal_block(parser.epilog, parser.epilog, language="text")
        out: list[nodes.Node] = [section]
        for name, text, sub in subs:
            section.extend(self._sections(sub, f"{command} {name}", text))
        return out


def setup(app: Sphinx) -> dict:
    app.add_directive("crossdyn-cli", CliDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
