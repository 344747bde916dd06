"""Saving and sharing models as safe, portable files.

:func:`save` writes a topic model, or a Pipeline of CountVectorizers ending in one, to
a single ``.safetensors`` file: arrays as tensors, parameters and the rest as JSON
metadata; :func:`load` reads it back without running any code from the file, on any
device, with later versions of sktopics (files of earlier format versions are
upgraded). :func:`save_pretrained`, :func:`push_to_hub` and :func:`from_pretrained`
share models as folders and on the Hugging Face Hub. Needs ``safetensors``
(``pip install "sktopics[io]"``); the Hub helpers need ``huggingface_hub``.

:func:`save`, :func:`load`, :func:`push_to_hub` and :func:`from_pretrained` are also
available as ``sktopics.save`` and so on. Read more in the :ref:`User Guide
<persistence>`.
"""

from ._errors import ModelFileError
from ._format import FORMAT_VERSION
from ._hub import from_pretrained, push_to_hub, save_pretrained
from ._persist import load, save

__all__ = ["FORMAT_VERSION", "ModelFileError", "from_pretrained", "load", "push_to_hub", "save",
           "save_pretrained"]
