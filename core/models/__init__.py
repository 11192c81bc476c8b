"""The model registry: base models (folder, hub id, imported GGUF, the demo), adapters and
merged models registered by training. Rows live in the store (`core.store.serving`)."""

from core.models.folder import FolderError, FolderInfo, check_adapter_folder, check_model_folder
from core.models.grouping import GroupedModels, group_models, merge_source
from core.models.registry import (
    DEMO_MODEL_NAME,
    DEMO_PACKAGE,
    RegistryError,
    add_demo,
    add_folder,
    add_hub,
    demo_to_offer,
    find_demo_gguf,
    get,
    import_gguf,
    model_dir,
    register_adapter,
    register_merged,
    remove,
)
from core.store.serving import ModelRecord, list_models

__all__ = [
    "DEMO_MODEL_NAME",
    "DEMO_PACKAGE",
    "FolderError",
    "FolderInfo",
    "GroupedModels",
    "ModelRecord",
    "RegistryError",
    "add_demo",
    "add_folder",
    "add_hub",
    "check_adapter_folder",
    "check_model_folder",
    "demo_to_offer",
    "find_demo_gguf",
    "get",
    "group_models",
    "import_gguf",
    "list_models",
    "merge_source",
    "model_dir",
    "register_adapter",
    "register_merged",
    "remove",
]
