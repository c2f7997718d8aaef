"""fixer: explain and fix PyTorch device-placement errors."""

__version__ = "0.1.0"
