"""scikit-learn's estimator checks on every sktopics estimator: at the suite's fast
parameters, and at the defaults users run (the default architecture and batch size,
where a batch-dependent result would show)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from ._instances import default_instances, expected_failed_checks, fast_instances


@parametrize_with_checks(fast_instances(), expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@parametrize_with_checks(default_instances(), expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_estimator_at_the_defaults(estimator, check):
    check(estimator)
