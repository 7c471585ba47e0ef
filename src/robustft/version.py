"""The package version, in the ground layer so run folders can record it without importing the package top."""

__version__ = "0.1.0"
