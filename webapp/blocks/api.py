"""REST API for the team block library: blocks, their versions, and the definitions they use."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.mixins import TeamScopedMixin, scope_to_user_teams
from webapp.api.parsers import SpecJSONParser
from webapp.api.serializers import IdField, StrictSerializer, UserRefSerializer

from . import services
from .models import Block, BlockVersion
from .selectors import (
    block_version_get,
    block_version_latest,
    blocks_latest_interface,
    blocks_version_numbers,
    blocks_with_latest,
)

DEFINITION_SCHEMA = {
    "type": "object",
    "additionalProperties": {},
    "description": "A block definition (engine BlockSpec: params, inputs, nodes, outputs, description, "
    "layout, ui); `name` and `version` are set by the server.",
}


@extend_schema_field(DEFINITION_SCHEMA)
class DefinitionField(serializers.JSONField):
    """A block definition in a request or an answer: a JSON object."""


@extend_schema_field({"type": "array", "items": DEFINITION_SCHEMA})
class DefinitionListField(serializers.JSONField):
    """Definitions of the blocks a version uses, dependencies first."""


class BlockParamSerializer(serializers.Serializer):
    name = serializers.CharField()
    default = serializers.JSONField()
    description = serializers.CharField(required=False)


class BlockInterfaceSerializer(serializers.Serializer):
    """What an instance of the newest version looks like: its parameters and ports."""

    params = BlockParamSerializer(many=True)
    inputs = serializers.ListField(child=serializers.CharField())
    outputs = serializers.ListField(child=serializers.CharField())


class BlockSerializer(serializers.ModelSerializer):
    """A block as the library lists it."""

    created_by = UserRefSerializer(read_only=True, allow_null=True)
    latest_version = serializers.SerializerMethodField()
    versions = serializers.SerializerMethodField()
    interface = serializers.SerializerMethodField()

    class Meta:
        model = Block
        fields = [
            "id",
            "team",
            "name",
            "description",
            "latest_version",
            "versions",
            "interface",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def _page(self, name: str, block: Block) -> Any:
        """A per-page read (version numbers, interfaces), made once by the list view or for one block."""
        found = self.context.get(name)
        if found is None:
            read = blocks_version_numbers if name == "versions" else blocks_latest_interface
            found = read(block_ids=[block.pk])
        return found.get(block.pk)

    def get_latest_version(self, block: Block) -> int | None:
        numbers = self._page("versions", block) or []
        return numbers[0] if numbers else None

    def get_versions(self, block: Block) -> list[int]:
        return list(self._page("versions", block) or [])

    @extend_schema_field(BlockInterfaceSerializer(allow_null=True))
    def get_interface(self, block: Block) -> dict[str, Any] | None:
        return self._page("interface", block)


class BlockVersionSummarySerializer(serializers.ModelSerializer):
    block = serializers.IntegerField(source="block_id", read_only=True)
    ref = serializers.CharField(read_only=True, help_text='How a spec names it: "Name@number".')
    created_by = UserRefSerializer(read_only=True, allow_null=True)

    class Meta:
        model = BlockVersion
        fields = ["block", "number", "ref", "note", "created_by", "created_at"]
        read_only_fields = fields


class BlockVersionSerializer(BlockVersionSummarySerializer):
    """A version with its definition and the definitions it uses (so the canvas can place it)."""

    definition = DefinitionField(read_only=True)
    dependencies = DefinitionListField(read_only=True)

    class Meta(BlockVersionSummarySerializer.Meta):
        fields = [*BlockVersionSummarySerializer.Meta.fields, "definition", "dependencies"]
        read_only_fields = fields


class BlockDetailSerializer(BlockSerializer):
    latest = serializers.SerializerMethodField()

    class Meta(BlockSerializer.Meta):
        fields = [*BlockSerializer.Meta.fields, "latest"]
        read_only_fields = fields

    @extend_schema_field(BlockVersionSerializer(allow_null=True))
    def get_latest(self, block: Block) -> dict[str, Any] | None:
        version = block_version_latest(block=block)
        return BlockVersionSerializer(version).data if version is not None else None


class InputShapesField(serializers.ListField):
    """Sample shapes of the block's inputs (per sample, batch implicit), for the shape check."""

    child = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1), max_length=8
    )


class BlockVersionCreateSerializer(StrictSerializer):
    definition = DefinitionField()
    note = serializers.CharField(required=False, allow_blank=True, max_length=services.NOTE_MAX)
    input_shapes = InputShapesField(
        required=False,
        max_length=64,
        help_text="Optional: a shape per block input, to check shapes through the block too.",
    )


class BlockCreateSerializer(BlockVersionCreateSerializer):
    """A new block: its team, name and description, and its first version."""

    team = IdField()
    name = serializers.RegexField(
        services.NAME_PATTERN.pattern, max_length=64,
        error_messages={"invalid": "A block's name must be a Python identifier (letters, digits, _; not "
                                   "starting with a digit; at most 64 characters)."},
    )
    description = serializers.CharField(
        required=False, allow_blank=True, max_length=services.DESCRIPTION_MAX
    )


class BlockUpdateSerializer(StrictSerializer):
    description = serializers.CharField(allow_blank=True, max_length=services.DESCRIPTION_MAX)


class BlockViewSet(
    TeamScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The blocks of the user's teams (viewers read, editors write)."""

    parser_classes = [SpecJSONParser]  # a definition body: NETLOOM_MAX_SPEC_BYTES, 413 past it

    queryset = blocks_with_latest(Block.objects.select_related("created_by")).order_by(
        "-latest_at", "-id"
    )

    def get_serializer_class(self):
        return BlockDetailSerializer if self.action == "retrieve" else BlockSerializer

    def list(self, request: Request) -> Response:
        """The blocks of the user's teams (`?team=` one of them), newest version first, each with
        its version numbers and the newest version's params and ports."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        blocks = list(page if page is not None else self.filter_queryset(self.get_queryset()))
        ids = [block.pk for block in blocks]
        context = {
            **self.get_serializer_context(),
            "versions": blocks_version_numbers(block_ids=ids),
            "interface": blocks_latest_interface(block_ids=ids),
        }
        data = BlockSerializer(blocks, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    @extend_schema(request=BlockCreateSerializer, responses={201: BlockDetailSerializer})
    def create(self, request: Request) -> Response:
        """Create a block and its version 1; the engine checks the definition (400 naming the inner node)."""
        payload = BlockCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        team = self.team_for_write(data["team"])
        block = services.block_create(
            team=team,
            name=data["name"],
            description=data.get("description", ""),
            definition=data["definition"],
            note=data.get("note", ""),
            input_shapes=data.get("input_shapes"),
            created_by=request.user,
        )
        return Response(
            BlockDetailSerializer(self.get_queryset().get(pk=block.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=BlockUpdateSerializer, responses=BlockDetailSerializer)
    def partial_update(self, request: Request, pk: int) -> Response:
        """Change the description (the name is part of every `Name@v` reference)."""
        block = self.get_object()
        payload = BlockUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        services.block_update(block=block, description=payload.validated_data["description"])
        return Response(BlockDetailSerializer(self.get_queryset().get(pk=block.pk)).data)

    def perform_destroy(self, instance: Block) -> None:
        services.block_delete(block=instance)


class BlockVersionViewSet(TeamScopedMixin, viewsets.GenericViewSet):
    """Versions of one block: list, save a new one (POST), read one with what it uses."""

    parser_classes = [SpecJSONParser]  # a definition body: NETLOOM_MAX_SPEC_BYTES, 413 past it

    queryset = BlockVersion.objects.select_related("created_by", "block")
    team_lookup = "block__team"
    lookup_field = "number"

    def get_serializer_class(self):
        return BlockVersionSummarySerializer if self.action == "list" else BlockVersionSerializer

    def get_block(self) -> Block:
        """The block from the URL, 404 unless it belongs to one of the user's teams."""
        blocks = scope_to_user_teams(Block.objects.all(), user=self.request.user)
        return get_object_or_404(blocks, pk=self.kwargs["block_pk"])

    def get_queryset(self):
        return super().get_queryset().filter(block_id=self.get_block().pk).order_by("-number")

    @extend_schema(responses=BlockVersionSummarySerializer(many=True))
    def list(self, request: Request, block_pk: int) -> Response:
        versions = self.get_queryset().defer("definition", "dependencies")
        page = self.paginate_queryset(versions)
        if page is not None:
            return self.get_paginated_response(BlockVersionSummarySerializer(page, many=True).data)
        return Response(BlockVersionSummarySerializer(versions, many=True).data)

    @extend_schema(responses=BlockVersionSerializer)
    def retrieve(self, request: Request, block_pk: int, number: int) -> Response:
        """One version: its definition and `dependencies` (the definitions it uses, dependencies first)."""
        version = block_version_get(block=self.get_block(), number=int(number))
        return Response(BlockVersionSerializer(version).data)

    @extend_schema(request=BlockVersionCreateSerializer, responses={201: BlockVersionSerializer})
    def create(self, request: Request, block_pk: int) -> Response:
        """Save a new version (number latest + 1); the engine checks the definition."""
        block = self.get_block()
        # Role check against the block's team: viewers read, editors save.
        self.require_role(block.team_id, self.write_role)
        payload = BlockVersionCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        version = services.block_version_create(
            block=block,
            definition=data["definition"],
            note=data.get("note", ""),
            input_shapes=data.get("input_shapes"),
            created_by=request.user,
        )
        return Response(BlockVersionSerializer(version).data, status=status.HTTP_201_CREATED)
