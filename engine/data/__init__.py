"""Datasets: built-in and uploaded sources, recipes, splits, normalisation and augmentation."""

from engine.data.archive import ArchiveImages, LazyImageSet, make_loader
from engine.data.augment import build_augmentation, png_grid
from engine.data.builtin import BUILTIN_DATASETS, BuiltinDataset, builtin_catalog
from engine.data.errors import DataError
from engine.data.limits import DataLimits
from engine.data.load import load_dataset
from engine.data.preview import preview_augmentations
from engine.data.recipe import DataRecipe, parse_recipe
from engine.data.summary import inspect_upload, summarize
from engine.data.tensorset import BatchSource, DatasetInfo, Splits, TensorSet

__all__ = [
    "BUILTIN_DATASETS",
    "ArchiveImages",
    "BatchSource",
    "BuiltinDataset",
    "DataError",
    "DataLimits",
    "DataRecipe",
    "DatasetInfo",
    "LazyImageSet",
    "Splits",
    "TensorSet",
    "build_augmentation",
    "builtin_catalog",
    "inspect_upload",
    "load_dataset",
    "make_loader",
    "parse_recipe",
    "png_grid",
    "preview_augmentations",
    "summarize",
]
