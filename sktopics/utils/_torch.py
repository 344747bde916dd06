"""The torch helpers' former home, kept while imports move to the modules by job:
:mod:`._devices`, :mod:`._threads`, :mod:`._generators` and :mod:`._modules`."""

from ._devices import (  # noqa: F401
    DeviceWarning,
    _current_cuda,
    available_device,
    check_deterministic_support,
    csr_to_dense_tensor,
    device_budget,
    resolve_device,
)
from ._generators import draw_seed, make_generator, rng_scope, seed_generators  # noqa: F401
from ._modules import FrozenModule, TensorCache, _module_device, evaluation_mode  # noqa: F401
from ._threads import (  # noqa: F401
    _available_cores,
    _per_thread_setting,
    resolve_n_jobs,
    thread_scope,
    threads_from_n_jobs,
)
