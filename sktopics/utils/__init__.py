"""Utilities shared by the sktopics estimators and evaluation code.

Public: :class:`DeviceWarning`, the warning a fitted model gives when it is moved to
another device than the one it recorded (see the user guide, "GPUs").
"""

from ._torch import DeviceWarning

__all__ = ["DeviceWarning"]
