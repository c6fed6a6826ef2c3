"""DataRecipe: defaults, JSON round trip, and unknown keys rejected with the field named."""

from __future__ import annotations

import pytest

from engine.data import DataError, DataRecipe, parse_recipe


def test_only_the_source_is_required_and_the_recipe_round_trips_as_json() -> None:
    recipe = parse_recipe({"source": {"kind": "csv", "path": "/tmp/a.csv", "target": "y"}})
    assert recipe.split.val == 0.15 and recipe.split.test == 0.15 and recipe.split.stratify
    assert recipe.transforms.normalize == "standard" and recipe.transforms.augment == []
    assert recipe.source.categorical == "onehot" and recipe.source.features is None
    again = DataRecipe.model_validate_json(recipe.model_dump_json())
    assert again == recipe


def test_augmentations_parse_by_op() -> None:
    recipe = parse_recipe(
        {
            "source": {"kind": "images", "path": "x.zip", "size": [16, 16], "channels": 1},
            "transforms": {"augment": [{"op": "hflip", "p": 1.0}, {"op": "crop", "padding": 3}]},
        }
    )
    assert [a.op for a in recipe.transforms.augment] == ["hflip", "crop"]
    assert recipe.transforms.augment[1].padding == 3


@pytest.mark.parametrize(
    ("obj", "field", "words"),
    [
        (
            {"source": {"kind": "builtin", "name": "iris", "colour": 1}},
            "source.colour",
            "unknown key 'colour'",
        ),
        ({"source": {"kind": "builtin", "name": "iris"}, "splitt": {}}, "splitt", "unknown key"),
        (
            {
                "source": {"kind": "builtin", "name": "iris"},
                "transforms": {"augment": [{"op": "hflip", "q": 1}]},
            },
            "transforms.augment.0.q",
            "unknown key 'q'",
        ),
        ({"source": {"kind": "csv", "path": "a.csv"}}, "source.target", "required"),
        ({"source": {"kind": "parquet", "path": "a"}}, "source", "kind"),
        (
            {"source": {"kind": "builtin", "name": "iris"}, "split": {"val": 0.6, "test": 0.5}},
            "split",
            "below 1",
        ),
        ({"source": {"kind": "images", "path": "a.zip", "channels": 2}}, "source.channels", ""),
    ],
)
def test_bad_recipes_name_the_field(obj: dict, field: str, words: str) -> None:
    with pytest.raises(DataError) as err:
        parse_recipe(obj)
    assert err.value.field == field
    assert words in str(err.value)
    assert err.value.to_json()["field"] == field
