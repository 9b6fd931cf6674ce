import sys

from .loading import COMPILER_DOES_NOT_IMPORT, compiler_failure

if __name__ == "__main__":
    # Before the CLI, which imports the compiler: a compiler that fails to import is named as
    # such (exit 3), not left as the harness's traceback (exit 1, the status for findings).
    failure = compiler_failure()
    if failure is not None:
        print(failure, file=sys.stderr)
        sys.exit(COMPILER_DOES_NOT_IMPORT)
    from .cli import main

    sys.exit(main())
