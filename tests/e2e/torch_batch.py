"""Runs several commands of the PyTorch reference scripts (torch_llama.py, torch_gpt2.py,
torch_lora.py, ...) in one interpreter, so that PyTorch is loaded once: importing it costs about
a second of CPU, more than most commands take.

    python3 torch_batch.py < commands

Each line of stdin is one command, as a shell would split it: SCRIPT ARGS... [> FILE], SCRIPT
relative to this folder; with `> FILE` the command's standard output goes to FILE. Blank lines
and # comments are skipped. The commands run in order, each as its script's __main__ with the
modules of this folder imported anew (what one command patches, the next does not see); the
first that fails stops the batch: its line is named, FILE (if any) is printed, and the batch
exits with the command's status (1 for a message).
"""
import contextlib
import os
import runpy
import shlex
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def forget_our_modules():
    """Drops the modules imported from this folder, so that the next command imports them anew
    (a command may patch one: torch_lora.py's LoRA replaces torch_llama.linear)."""
    for name, module in list(sys.modules.items()):
        if os.path.dirname(os.path.abspath(getattr(module, "__file__", None) or "/")) == HERE:
            del sys.modules[name]


def run(words):
    """Runs one command; returns its exit status."""
    script = os.path.join(HERE, words[0])
    sys.argv = [script] + words[1:]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        if stop.code is None or stop.code == 0:
            return 0
        if isinstance(stop.code, int):
            return stop.code
        print(stop.code, file=sys.stderr)
        return 1
    except Exception:  # as the interpreter would report it, then the batch names the line
        traceback.print_exc()
        return 1
    finally:
        forget_our_modules()
    return 0


def main():
    for number, line in enumerate(sys.stdin, 1):
        words = shlex.split(line, comments=True)
        if not words:
            continue
        output = None
        if len(words) >= 2 and words[-2] == ">":
            output, words = words[-1], words[:-2]
        if output is None:
            status = run(words)
        else:
            with open(output, "w") as out, contextlib.redirect_stdout(out):
                status = run(words)
        sys.stdout.flush()
        if status != 0:
            print(f"torch_batch: line {number} failed (exit {status}): {line.strip()}",
                  file=sys.stderr)
            if output is not None:
                sys.stderr.write(open(output).read())
            sys.exit(status)


if __name__ == "__main__":
    main()
