#!/usr/bin/env python3
"""A misbehaving UCI engine for the watchdog tests: ``fake_uci.py MODE [STATE_FILE]``.

Modes (what happens on ``go``; ``uci``, ``isready``, ``position`` work normally):

- ``ok``: plays the first legal move;
- ``hang``: never answers (ignores ``stop``, keeps reading nothing);
- ``crash``: exits with code 3;
- ``illegal``: answers a move that captures the enemy king (never legal);
- ``garbage``: answers ``bestmove zz99`` (not a move at all);
- ``crash-once``: crashes if STATE_FILE does not exist (and creates it), else plays like ``ok``;
- ``mute``: never answers ``uci`` (start-up hangs);
- ``slow``: plays like ``ok`` after sleeping 2 s, whatever the limit (a movetime overrun).
"""
import os
import sys
import time

import chess
import chess.variant


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    state = sys.argv[2] if len(sys.argv) > 2 else ""
    variant = "chess"
    board: chess.Board = chess.Board()
    out = sys.stdout
    for line in sys.stdin:
        tokens = line.split()
        if not tokens:
            continue
        cmd = tokens[0]
        if cmd == "uci":
            if mode == "mute":
                continue
            out.write("id name fake-" + mode + "\nid author searchbench tests\n")
            out.write("option name UCI_Variant type combo default chess var chess var crazyhouse\n")
            out.write("option name Hash type spin default 16 min 1 max 1024\nuciok\n")
        elif cmd == "isready":
            out.write("readyok\n")
        elif cmd == "setoption" and len(tokens) >= 5 and tokens[2] == "UCI_Variant":
            variant = tokens[4]
        elif cmd == "position":
            cls = chess.variant.CrazyhouseBoard if variant == "crazyhouse" else chess.Board
            i = tokens.index("moves") if "moves" in tokens else len(tokens)
            board = cls() if tokens[1] == "startpos" else cls(" ".join(tokens[2:i]))
            for m in tokens[i + 1:]:
                board.push_uci(m)
        elif cmd == "go":
            if mode == "hang":
                time.sleep(3600)
            elif mode == "crash" or (mode == "crash-once" and not os.path.exists(state)):
                if state:
                    open(state, "w").close()
                sys.exit(3)
            elif mode == "illegal":
                us, them = board.king(board.turn), board.king(not board.turn)
                assert us is not None and them is not None
                out.write(f"bestmove {chess.square_name(us)}{chess.square_name(them)}\n")
            elif mode == "garbage":
                out.write("bestmove zz99\n")
            else:
                if mode == "slow":
                    time.sleep(2.0)
                move = next(iter(board.legal_moves))
                out.write(f"info depth 1 score cp 0 nodes 1 pv {move.uci()}\nbestmove {move.uci()}\n")
        elif cmd == "quit":
            return
        out.flush()


if __name__ == "__main__":
    main()
