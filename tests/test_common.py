"""scikit-learn's estimator checks on every sktopics estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from ._instances import expected_failed_checks, fast_instances


@parametrize_with_checks(fast_instances(), expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
