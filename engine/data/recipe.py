"""DataRecipe: how to turn a source into tensors (JSON, stored with every run)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from engine.data.errors import DataError


class _Strict(BaseModel):
    # Unknown keys are a typo the user should hear about, not something to ignore.
    model_config = ConfigDict(extra="forbid")


class BuiltinSource(_Strict):
    """A dataset shipped with scikit-learn or generated from a seed."""

    kind: Literal["builtin"]
    name: str
    seed: int = 0  # only the generated datasets (moons, spirals) use it

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from engine.data.builtin import BUILTIN_DATASETS

        if name not in BUILTIN_DATASETS:
            raise ValueError(
                f"unknown built-in dataset {name!r}; available: {', '.join(BUILTIN_DATASETS)}"
            )
        return name


Task = Literal["auto", "classification", "regression"]


MissingStrategy = Literal[
    "mean", "median", "most_frequent", "constant", "drop_row", "category", "fail"
]
NUMERIC_STRATEGIES = ("mean", "median", "most_frequent", "constant", "drop_row", "fail")
CATEGORICAL_STRATEGIES = ("most_frequent", "constant", "drop_row", "category", "fail")
TARGET_STRATEGIES = ("drop_row", "fail")


class MissingRule(_Strict):
    """What to do with a column's empty cells (Ludwig's missing_value_strategy, sklearn's SimpleImputer).

    mean / median / most_frequent / constant fill the gap (statistics from the train split only),
    drop_row leaves the row out before splitting, category (categorical columns) keeps "(missing)"
    as a category of its own, fail refuses the file while the column has gaps.
    """

    strategy: MissingStrategy
    value: float | str | None = None  # the constant, for "constant"
    indicator: bool = False  # add a 0/1 feature "<column> (missing)"
    # Written by the engine (the value fitted on the train split); given back, it is used as is.
    fill: float | str | None = None

    @model_validator(mode="after")
    def _constant_has_a_value(self) -> MissingRule:
        if self.strategy == "constant" and self.value is None:
            raise ValueError('"constant" needs a value')
        return self


Encoding = Literal["auto", "utf-8", "utf-16", "latin-1"]


class CsvSource(_Strict):
    """A CSV file with a header row."""

    kind: Literal["csv"]
    path: str
    target: str
    features: list[str] | None = None  # None: every column but the target
    categorical: Literal["onehot", "index"] = "onehot"
    task: Task = "auto"
    delimiter: str | None = Field(
        default=None, min_length=1, max_length=1
    )  # None: guessed from the header
    # "auto": UTF-8 unless a byte-order mark says UTF-16 (uploads also recognise Latin-1).
    encoding: Encoding = "auto"
    # Per column; a column not named gets the default (median for numbers, "category" for
    # categories, fail for the target). A plain string is short for {"strategy": ...}.
    missing: dict[str, MissingRule] = Field(default_factory=dict)
    # The columnar copy of the file (Arrow IPC), written when the dataset was processed;
    # None or stale: the CSV itself is parsed.
    table: str | None = None

    @field_validator("missing", mode="before")
    @classmethod
    def _strategy_shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"strategy": v} if isinstance(v, str) else v for k, v in value.items()}
        return value


class ImagesSource(_Strict):
    """A zip archive with one folder per class."""

    kind: Literal["images"]
    path: str
    size: tuple[Annotated[int, Field(ge=1, le=1024)], Annotated[int, Field(ge=1, le=1024)]] = (
        32,
        32,
    )
    channels: Literal[1, 3] = 3


class TensorsSource(_Strict):
    """A .safetensors or .npz file holding x and y."""

    kind: Literal["tensors"]
    path: str
    task: Task = "auto"


Source = Annotated[
    BuiltinSource | CsvSource | ImagesSource | TensorsSource, Field(discriminator="kind")
]


class _Augment(_Strict):
    p: float = Field(default=0.5, ge=0.0, le=1.0)


class HFlip(_Augment):
    """Mirror left-right."""

    op: Literal["hflip"]


class VFlip(_Augment):
    """Mirror top-bottom."""

    op: Literal["vflip"]


class Affine(_Augment):
    """Rotate, shift and scale."""

    op: Literal["affine"]
    degrees: float = Field(default=10.0, ge=0.0, le=180.0)
    translate: float = Field(default=0.1, ge=0.0, le=1.0)  # fraction of width/height
    scale: tuple[float, float] | None = None


class Crop(_Augment):
    """Random crop: from a padded image (padding) or resized from a random area (scale)."""

    op: Literal["crop"]
    padding: int = Field(default=2, ge=0, le=256)
    scale: (
        tuple[Annotated[float, Field(gt=0.0, le=1.0)], Annotated[float, Field(gt=0.0, le=1.0)]]
        | None
    ) = None


class Noise(_Augment):
    """Additive Gaussian noise (std in pixel units for images)."""

    op: Literal["noise"]
    std: float = Field(default=0.05, ge=0.0, le=10.0)


class ColorJitter(_Augment):
    """Random brightness, contrast, saturation and hue (3-channel images only)."""

    op: Literal["color_jitter"]
    brightness: float = Field(default=0.2, ge=0.0, le=1.0)
    contrast: float = Field(default=0.2, ge=0.0, le=1.0)
    saturation: float = Field(default=0.2, ge=0.0, le=1.0)
    hue: float = Field(default=0.0, ge=0.0, le=0.5)


AugmentSpec = Annotated[
    HFlip | VFlip | Affine | Crop | Noise | ColorJitter, Field(discriminator="op")
]


class Transforms(_Strict):
    """Normalisation (statistics from the train split) and training-time augmentation."""

    normalize: Literal["standard", "none", "minmax"] = "standard"
    augment: list[AugmentSpec] = Field(default_factory=list)


class Split(_Strict):
    """Fractions of the rows held out for validation and test."""

    val: float = Field(default=0.15, ge=0.0, lt=1.0)
    test: float = Field(default=0.15, ge=0.0, lt=1.0)
    seed: int = 0
    stratify: bool = True

    @model_validator(mode="after")
    def _leaves_training_rows(self) -> Split:
        if self.val + self.test >= 1.0:
            raise ValueError(f"val + test must be below 1 (got {self.val} + {self.test})")
        return self


class DataRecipe(_Strict):
    """Source, transforms and split: everything needed to repeat a run's data."""

    source: Source
    transforms: Transforms = Transforms()
    split: Split = Split()


def parse_recipe(obj: DataRecipe | dict[str, Any] | str) -> DataRecipe:
    """Validate a recipe given as a model, a dict or JSON text; raises DataError naming the field."""
    if isinstance(obj, DataRecipe):
        return obj
    try:
        if isinstance(obj, str):
            return DataRecipe.model_validate_json(obj)
        return DataRecipe.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(p) for p in first["loc"]]
        # Drop pydantic's union tags ("source.csv.target" -> "source.target").
        tags = {
            "builtin",
            "csv",
            "images",
            "tensors",
            "hflip",
            "vflip",
            "affine",
            "crop",
            "noise",
            "color_jitter",
        }
        loc = [p for i, p in enumerate(loc) if not (i > 0 and p in tags)]
        field = ".".join(loc) or None
        msg = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = f"unknown key '{loc[-1]}'"
        more = len(exc.errors()) - 1
        if more:
            msg += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise DataError(msg, field=field) from None
    except json.JSONDecodeError as exc:  # pragma: no cover - pydantic wraps JSON errors itself
        raise DataError(f"not JSON: {exc}") from None
