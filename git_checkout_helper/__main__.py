"""``python -m git_checkout_helper <command>``: the helper and the coordinator.

The coordinator starts helpers as ``python -m git_checkout_helper
checkout--helper``, with its own interpreter, so a checkout never depends on
what PATH holds.
"""

import sys


def main() -> int:
    from . import cli

    commands = {
        "checkout--helper": cli.helper_main,
        "parallel-checkout": cli.checkout_main,
        "parallel-clone": cli.clone_main,
    }
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        names = "|".join(commands)
        sys.stderr.write(f"usage: python -m git_checkout_helper {{{names}}} [<args>]\n")
        return 129
    cli.start_program(coordinator=sys.argv[1] != "checkout--helper")
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    from .cli import exit_now

    exit_now(main())
