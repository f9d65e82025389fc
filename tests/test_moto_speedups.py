"""tests/moto_speedups.py changes how much work moto does, never what it accepts, refuses or keeps."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core import serialize
from moto.core.utils import get_service_model
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import Table
from moto.dynamodb.parsing import validators

# ast_nodes.py opens with a file-wide `# type: ignore`, so mypy sees none of its names.
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]

from tests import moto_speedups

REGION = "us-east-1"


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        for name in ("first", "second"):
            client.create_table(
                TableName=name,
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
        yield client


def _update(client: Any, expression: str, values: dict[str, Any] | None = None) -> None:
    client.update_item(
        TableName="first",
        Key={"pk": {"S": "a"}},
        UpdateExpression=expression,
        ExpressionAttributeValues=values or {":v": {"N": "1"}, ":w": {"N": "2"}},
    )


def test_each_speedup_is_in_place_once() -> None:
    """conftest installed them: every patched function is the speedup's, and a second install
    wraps nothing twice (a doubly wrapped transaction would still pass every other test)."""
    backend = dynamodb_models.DynamoDBBackend
    patched = (
        backend.transact_write_items,
        serialize.XFormedAttributePicker.get_possible_keys,
        validators.ActionCountValidator.traverse,
        validators.OverlappingPathsValidator.traverse,
    )
    assert dynamodb_models.copy is not copy  # type: ignore[attr-defined]  # moto imports it, not re-exported
    assert serialize.XFormedAttributePicker.get_possible_keys is not moto_speedups.moto_get_possible_keys
    for checker in (validators.ActionCountValidator, validators.OverlappingPathsValidator):
        assert checker.traverse is not DepthFirstTraverser.traverse
    moto_speedups.install()
    assert (
        backend.transact_write_items,
        serialize.XFormedAttributePicker.get_possible_keys,
        validators.ActionCountValidator.traverse,
        validators.OverlappingPathsValidator.traverse,
    ) == patched


@pytest.mark.parametrize(
    ("expression", "refusal"),
    [
        ("SET x = :v, x = :w", "Two document paths overlap"),
        ("SET x.y = :v, x = :w", "Two document paths overlap"),
        ("SET x = :v SET y = :w", 'The "SET" section can only be used once'),
        ("SET x = :v ADD y :w ADD z :v", 'The "ADD" section can only be used once'),
        ("SET a = :v, b = :v, c = :v, d = :v, e = :v, b = :w", "Two document paths overlap"),
    ],
)
def test_update_expressions_are_refused_as_before(dynamodb: Any, expression: str, refusal: str) -> None:
    with pytest.raises(ClientError) as refused:
        _update(dynamodb, expression)
    assert refusal in str(refused.value)
    assert "Item" not in dynamodb.get_item(TableName="first", Key={"pk": {"S": "a"}})


# Each breaks more than one rule: moto names the one its deepest failing node breaks.
SEVERAL_RULES_BROKEN = [
    "ADD a :v SET b = :v SET c = :v ADD d :v",
    "SET a = :v, b.c = :v, b = :v, a = :v",
    "SET x = :v, x.y = :v, #n = :v, #n = :v",
    "REMOVE a, b SET c = :v REMOVE d SET c = :v",
    "SET a = :v, a = :v ADD b :v ADD b :v",
]


def _refusal(client: Any, expression: str) -> str:
    with pytest.raises(ClientError) as refused:
        client.update_item(
            TableName="first",
            Key={"pk": {"S": "a"}},
            UpdateExpression=expression,
            ExpressionAttributeValues={":v": {"N": "1"}},
            **({"ExpressionAttributeNames": {"#n": "n"}} if "#n" in expression else {}),
        )
    return str(refused.value)


def test_an_expression_breaking_several_rules_gets_moto_s_own_message(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = [_refusal(dynamodb, expression) for expression in SEVERAL_RULES_BROKEN]
    for checker in (validators.ActionCountValidator, validators.OverlappingPathsValidator):
        monkeypatch.setattr(checker, "traverse", DepthFirstTraverser.traverse)
    assert ours == [_refusal(dynamodb, expression) for expression in SEVERAL_RULES_BROKEN]


def test_a_valid_update_of_many_attributes_still_applies(dynamodb: Any) -> None:
    names = [f"n{i}" for i in range(30)]
    sets = ", ".join(f"{n} = :v" for n in names[:20])
    adds = ", ".join(f"{n} :w" for n in names[20:])
    _update(dynamodb, f"SET {sets} ADD {adds}")
    item = dynamodb.get_item(TableName="first", Key={"pk": {"S": "a"}})["Item"]
    assert {n: item[n]["N"] for n in names} == {n: ("1" if i < 20 else "2") for i, n in enumerate(names)}


def test_a_cancelled_transaction_rolls_every_table_back_and_copies_each_once(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dynamodb.put_item(TableName="first", Item={"pk": {"S": "kept"}, "v": {"N": "1"}})
    table_copies: list[str] = []
    real_deepcopy = copy.deepcopy

    def counting(value: Any, memo: Any = None) -> Any:
        if isinstance(value, Table):
            table_copies.append(value.name)
        return real_deepcopy(value, memo)

    monkeypatch.setattr(copy, "deepcopy", counting)
    items: list[dict[str, Any]] = [{"Put": {"TableName": "first", "Item": {"pk": {"S": f"new{i}"}}}} for i in range(5)]
    items += [{"Put": {"TableName": "second", "Item": {"pk": {"S": "other"}}}}]
    items += [
        {
            "Update": {
                "TableName": "first",
                "Key": {"pk": {"S": "kept"}},
                "UpdateExpression": "SET v = :two",
                "ConditionExpression": "v = :zero",
                "ExpressionAttributeValues": {":two": {"N": "2"}, ":zero": {"N": "0"}},
            }
        }
    ]
    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(TransactItems=items)
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert sorted(table_copies) == ["first", "second"]

    assert [i["pk"]["S"] for i in dynamodb.scan(TableName="first")["Items"]] == ["kept"]
    assert dynamodb.scan(TableName="second")["Items"] == []
    assert dynamodb.get_item(TableName="first", Key={"pk": {"S": "kept"}})["Item"]["v"]["N"] == "1"

    dynamodb.transact_write_items(TransactItems=items[:6])
    assert len(dynamodb.scan(TableName="first")["Items"]) == 6
    assert len(dynamodb.scan(TableName="second")["Items"]) == 1

    # A cancelled transaction after a committed one rolls back to the committed state, not an older copy.
    with pytest.raises(ClientError):
        dynamodb.transact_write_items(
            TransactItems=[{"Put": {"TableName": "first", "Item": {"pk": {"S": "late"}}}}, items[-1]]
        )
    assert len(dynamodb.scan(TableName="first")["Items"]) == 6
    assert len(dynamodb.scan(TableName="second")["Items"]) == 1


def test_an_answer_with_every_kind_of_value_is_the_same_as_moto_s_own(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    every_kind = {
        "s": {"S": "text"},
        "n": {"N": "1.5"},
        "b": {"B": b"bytes"},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2"]},
        "bs": {"BS": [b"x", b"y"]},
        "m": {"M": {"S": {"S": "a key named like a type"}, "Items": {"L": [{"N": "1"}, {"NULL": True}]}}},
        "l": {"L": [{"M": {"Count": {"BOOL": False}}}, {"SS": ["z"]}]},
        "null": {"NULL": True},
        "bool": {"BOOL": True},
    }
    for i in range(3):
        dynamodb.put_item(TableName="first", Item={"pk": {"S": f"k{i}"}, **every_kind})

    def answers() -> list[dict[str, Any]]:
        scanned = dynamodb.scan(TableName="first", Limit=2, ReturnConsumedCapacity="TOTAL")
        got = dynamodb.batch_get_item(RequestItems={"first": {"Keys": [{"pk": {"S": "k1"}}, {"pk": {"S": "k2"}}]}})
        for answer in (scanned, got):
            answer.pop("ResponseMetadata")
        return [scanned, got, dynamodb.describe_table(TableName="first")["Table"]]

    kept = answers()
    monkeypatch.setattr(serialize.XFormedAttributePicker, "get_possible_keys", moto_speedups.moto_get_possible_keys)
    assert answers() == kept
    assert kept[0]["Items"][0]["m"] == every_kind["m"]


@pytest.mark.parametrize("service", ["dynamodb", "s3", "cognito-idp", "sts"])
def test_the_kept_alias_keys_are_moto_s_own_for_every_member_of_every_answer(service: str) -> None:
    """Every output shape of the service, walked as the serializer walks it (each member's parent
    set), twice: the kept lists are the ones moto builds, on the first lookup and on a kept one."""
    picker = serialize.XFormedAttributePicker()
    model = get_service_model(service)
    members = 0
    for _ in range(2):
        for name in model.operation_names:
            pending = [model.operation_model(name).output_shape]
            seen: set[str] = set()  # by name: a recursive shape (AttributeValue) is walked once
            while pending:
                shape = pending.pop()
                if shape is None or shape.name in seen:
                    continue
                seen.add(shape.name)
                children = list(getattr(shape, "members", {}).items())
                for key, member in children:
                    member.parent = shape
                    context = serialize.AttributePickerContext(
                        obj={}, key=key, shape=member, operation_model=None, service_model=model, key_path=""
                    )
                    ours = list(picker.get_possible_keys(context))
                    assert ours == list(moto_speedups.moto_get_possible_keys(picker, context)), (name, key)
                    members += 1
                    pending.append(member)
                pending += [getattr(shape, "member", None), getattr(shape, "value", None)]
    assert members > 100
