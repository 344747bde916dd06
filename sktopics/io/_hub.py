"""Sharing models on the Hugging Face Hub: a folder with ``model.safetensors`` and a
``README.md`` model card, uploaded with ``huggingface_hub`` (an optional dependency)."""

import os
import tempfile
from pathlib import Path

from ..utils._pipeline import final_estimator
from ._card import hub_readme
from ._persist import MODEL_FILENAME, load, write_model

__all__ = ["from_pretrained", "push_to_hub", "save_pretrained"]

README = "README.md"


def _import_hub():
    try:
        import huggingface_hub
    except ImportError as exc:
        raise ImportError("Sharing models on the Hugging Face Hub needs huggingface_hub: "
                          "pip install huggingface_hub.") from exc
    return huggingface_hub


def save_pretrained(obj, directory):
    """Write a model folder: ``model.safetensors`` and its card as ``README.md``.

    The folder is what :func:`push_to_hub` uploads and what :func:`from_pretrained`
    (and :func:`~sktopics.load`) reads.

    Parameters
    ----------
    obj : estimator or Pipeline
        What :func:`~sktopics.save` takes.
    directory : str or path-like
        The folder, created if needed; its ``model.safetensors`` and ``README.md`` are
        replaced.

    Returns
    -------
    directory : pathlib.Path
        The folder written.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _, card = write_model(obj, directory / MODEL_FILENAME)
    model = final_estimator(obj)
    (directory / README).write_text(hub_readme(card, type(model).__name__), encoding="utf-8")
    return directory


def push_to_hub(obj, repo_id, *, commit_message=None, private=None, token=None, revision=None):
    """Upload a model to a Hugging Face Hub model repository.

    Writes :func:`save_pretrained`'s folder (``model.safetensors`` and a ``README.md``
    model card with ``library_name: sktopics`` and the tag ``topic-modeling``) and
    uploads it, creating the repository if needed. Needs ``huggingface_hub``
    (``pip install huggingface_hub``) and a token with write access (``hf auth login``
    or the ``HF_TOKEN`` environment variable).

    Parameters
    ----------
    obj : estimator or Pipeline
        What :func:`~sktopics.save` takes.
    repo_id : str
        The repository, ``"user/name"`` or ``"organisation/name"``.
    commit_message : str, default=None
        The commit's message (default: "Upload <model class> with sktopics").
    private : bool, default=None
        Whether a repository created here is private (None: the Hub's default).
    token : str, default=None
        A Hub token (None: the logged-in one).
    revision : str, default=None
        The branch to commit to (None: the default branch).

    Returns
    -------
    commit : huggingface_hub.CommitInfo
        The upload's commit (its ``commit_url`` links to it).
    """
    hub = _import_hub()
    api = hub.HfApi(token=token, library_name="sktopics")
    model = final_estimator(obj)
    with tempfile.TemporaryDirectory() as folder:
        save_pretrained(obj, folder)
        api.create_repo(repo_id, private=private, exist_ok=True)
        return api.upload_folder(
            repo_id=repo_id, folder_path=folder, revision=revision,
            commit_message=commit_message or f"Upload {type(model).__name__} with sktopics")


def from_pretrained(name_or_path, *, device="cpu", revision=None, token=None, cache_dir=None):
    """Load a model from a local file or folder, or from the Hugging Face Hub.

    A path that exists is loaded with :func:`~sktopics.load`; anything else is taken
    as a Hub repository id, whose ``model.safetensors`` is downloaded (into the Hub's
    cache) with ``huggingface_hub.hf_hub_download`` and loaded the same way: only data
    is read, whoever wrote the file.

    Parameters
    ----------
    name_or_path : str or path-like
        A model file, a folder holding ``model.safetensors``, or a repository id such
        as ``"user/name"``.
    device : {"cpu", "auto", "cuda"}, str, torch.device or None, default="cpu"
        Where the model is placed (see :func:`~sktopics.load`).
    revision : str, default=None
        The Hub revision (branch, tag or commit); None: the default branch.
    token : str, default=None
        A Hub token for a private repository.
    cache_dir : str or path-like, default=None
        The Hub cache folder (None: huggingface_hub's default).

    Returns
    -------
    obj : estimator or Pipeline
        The loaded model.

    Raises
    ------
    FileNotFoundError
        When ``name_or_path`` is no existing file or folder and does not look like a
        repository id (a path-like object, a name ending in ``.safetensors``, starting
        with ``.``, ``/`` or ``~``, or without exactly one ``/``).
    """
    if Path(name_or_path).exists():
        return load(name_or_path, device=device)
    name = str(name_or_path)
    if (isinstance(name_or_path, os.PathLike) or name.endswith(".safetensors")
            or name.startswith((".", "/", "~")) or name.count("/") != 1):
        raise FileNotFoundError(f"{name}: no such file or folder (and not a Hugging Face Hub "
                                "repository id such as 'owner/name').")
    hub = _import_hub()
    path = hub.hf_hub_download(repo_id=name, filename=MODEL_FILENAME,
                               revision=revision, token=token, cache_dir=cache_dir,
                               library_name="sktopics")
    return load(path, device=device)
