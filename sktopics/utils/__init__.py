"""Utilities shared by the sktopics estimators and evaluation code."""
