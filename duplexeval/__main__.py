"""`python -m duplexeval`: the same command line as the `duplexeval` script."""

from duplexeval.cli import main

if __name__ == "__main__":
    main()
