"""``searchbench engines`` (list the built-in engines or one engine's options) and
``searchbench uci --engine NAME`` (speak UCI on stdin/stdout)."""
from __future__ import annotations

import argparse
import io
import json
import sys

import board
from engines import catalog, registry, uci
from engines.base import EngineError
from engines.options import EXTERNAL_OPTIONS


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    pe = sub.add_parser("engines", help="list the built-in engines, or the options of one engine")
    pe.add_argument("name", nargs="?", help="an engine name or spec: show all its options and defaults")
    pe.add_argument("--json", action="store_true", help="print JSON")
    pe.set_defaults(func=_cmd_engines)

    pu = sub.add_parser("uci", help="speak UCI on stdin/stdout (for GUIs, cutechess-cli, lichess-bot)")
    pu.add_argument("--engine", required=True, help="an engine name or spec, e.g. material-ab or rise-mcts:nodes=800")
    pu.add_argument("--variant", choices=board.VARIANTS, default=None,
                    help="variant until the GUI sets UCI_Variant (default: chess where the engine plays it, "
                         "as GUIs that play chess never send UCI_Variant; else the engine's first)")
    pu.set_defaults(func=_cmd_uci)


def _cmd_engines(args: argparse.Namespace) -> int:
    if args.name:
        return _show_options(args.name, args.json)
    rows = [registry.describe(s) for s in registry.list_engines()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    cols = ("name", "evaluator", "search", "variants", "defaults", "status")
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols).rstrip())
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in cols).rstrip())
    print("\nspecs: NAME[:key=value,...] or EVALUATOR+SEARCH[:...] (evaluators: "
          f"{', '.join(registry.EVALUATORS)}; searches: {', '.join(registry.SEARCHES)}) or PROGRAM+uci|xboard; "
          "`searchbench engines NAME` lists the options")
    return 0


def _show_options(name: str, as_json: bool) -> int:
    spec = registry.resolve(name)
    infos = list(EXTERNAL_OPTIONS) if catalog.is_external(spec) else registry.option_infos(spec)
    effective = {} if catalog.is_external(spec) else registry.effective_values(spec)
    rows = []
    for o in infos:
        value = effective.get(o.name, spec.options.get(o.name, o.format(o.default)))
        rows.append({"option": o.name, "type": o.kind, "value": value, "help": o.help})
    if as_json:
        info = catalog.builtins().get(spec.name.partition(":")[0])
        print(json.dumps({"spec": str(spec), "name": spec.name, "options": rows,
                          "evidence": info.evidence if info else {}}, indent=1))
        return 0
    print(f"{spec.name}: {spec.evaluator} + {spec.search}")
    w = max(len(r["option"]) for r in rows)
    for r in rows:
        print(f"  {r['option'].ljust(w)}  {r['type']:<6}  {r['value']:<10}  {r['help']}".rstrip())
    if catalog.is_external(spec):
        print("  (any other option the program announces can be set by its own name)")
    info = catalog.builtins().get(spec.name.partition(":")[0])
    if info is not None and info.evidence:
        print("defaults chosen by the suite's own ablations:")
        for k, report in info.evidence.items():
            named = {"search": spec.search, "evaluator": spec.evaluator}
            chosen = named[k] if k in named else info.spec.options.get(k, effective.get(k, "?"))
            print(f"  {k}={chosen}  {report}")
    return 0


def _cmd_uci(args: argparse.Namespace) -> int:
    spec = registry.resolve(args.engine)
    if catalog.is_external(spec):
        raise EngineError(f"{spec.name} is an external engine; run the program itself as the UCI engine")
    inp = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline=None)
    uci.serve(spec, inp, sys.stdout, variant=args.variant or registry.default_variant(spec))
    return 0
