"""The only module that imports private scikit-learn names.

scikit-learn's validation helpers (`validate_data`, `_fit_context`, the parameter
constraint objects) are private or semi-private and move between releases. Every
other sktopics module imports them from here, so a future change is mended in one
place.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = [
    "HasMethods",
    "Interval",
    "Options",
    "StrOptions",
    "_fit_context",
    "check_is_fitted",
    "validate_data",
    "validate_parameter_constraints",
    "validate_params",
]
