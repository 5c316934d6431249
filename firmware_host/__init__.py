"""Table controller host: the daemon and the Macau rules core."""

__version__ = "0.1.0"
