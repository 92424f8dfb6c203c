"""The simulator judged by Apple's App Store Server Library (run by scripts/apple-library.sh).

Every check failure is collected and printed; the exit status is 1 if there was any.
"""

import base64
import json
import os
import sys
import time
import typing
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
import zlib

import attr
import jwt
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from appstoreserverlibrary import signed_data_verifier as verifier_module
from appstoreserverlibrary.jws_signature_creator import IntroductoryOfferEligibilitySignatureCreator, PromotionalOfferV2SignatureCreator
from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.AccountTenure import AccountTenure
from appstoreserverlibrary.models.AppTransaction import AppTransaction
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.ConsumptionRequestV1 import ConsumptionRequestV1
from appstoreserverlibrary.models.ConsumptionStatus import ConsumptionStatus
from appstoreserverlibrary.models.BulletPoint import BulletPoint
from appstoreserverlibrary.models.DecodedRealtimeRequestBody import DecodedRealtimeRequestBody
from appstoreserverlibrary.models.DefaultConfigurationRequest import DefaultConfigurationRequest
from appstoreserverlibrary.models.HeaderPosition import HeaderPosition
from appstoreserverlibrary.models.ImageSize import ImageSize
from appstoreserverlibrary.models.ImageState import ImageState
from appstoreserverlibrary.models.MessageState import MessageState
from appstoreserverlibrary.models.PerformanceTestRequest import PerformanceTestRequest
from appstoreserverlibrary.models.PerformanceTestStatus import PerformanceTestStatus
from appstoreserverlibrary.models.RealtimeUrlRequest import RealtimeUrlRequest
from appstoreserverlibrary.models.UploadMessageImage import UploadMessageImage
from appstoreserverlibrary.models.UploadMessageRequestBody import UploadMessageRequestBody
from appstoreserverlibrary.models.DeliveryStatus import DeliveryStatus
from appstoreserverlibrary.models.DeliveryStatusV1 import DeliveryStatusV1
from appstoreserverlibrary.models.ExtendReasonCode import ExtendReasonCode
from appstoreserverlibrary.models.LifetimeDollarsPurchased import LifetimeDollarsPurchased
from appstoreserverlibrary.models.LifetimeDollarsRefunded import LifetimeDollarsRefunded
from appstoreserverlibrary.models.Platform import Platform
from appstoreserverlibrary.models.PlayTime import PlayTime
from appstoreserverlibrary.models.RefundPreference import RefundPreference
from appstoreserverlibrary.models.UserStatus import UserStatus
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.ExtendRenewalDateRequest import ExtendRenewalDateRequest
from appstoreserverlibrary.models.HistoryResponse import HistoryResponse
from appstoreserverlibrary.models.InAppOwnershipType import InAppOwnershipType
from appstoreserverlibrary.models.JWSRenewalInfoDecodedPayload import JWSRenewalInfoDecodedPayload
from appstoreserverlibrary.models.JWSTransactionDecodedPayload import JWSTransactionDecodedPayload
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserverlibrary.models.OrderLookupStatus import OrderLookupStatus
from appstoreserverlibrary.models.ResponseBodyV2DecodedPayload import ResponseBodyV2DecodedPayload
from appstoreserverlibrary.models.Status import Status
from appstoreserverlibrary.models.StatusResponse import StatusResponse
from appstoreserverlibrary.models.Subtype import Subtype
from appstoreserverlibrary.models.TransactionHistoryRequest import Order, ProductType, TransactionHistoryRequest
from appstoreserverlibrary.models.UpdateAppAccountTokenRequest import UpdateAppAccountTokenRequest
from appstoreserverlibrary.receipt_utility import ReceiptUtility
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

SIM = sys.argv[1].rstrip("/")
# Where `serve --simulator --export-keys` wrote the In-App Purchase keys it generated.
KEYS = sys.argv[2]
# The server beside the simulator (its offer signatures are judged too).
API = sys.argv[3].rstrip("/")
APP_KEY = "demo-app-key-0123456789"
OFFER = ("com.example.pro.monthly", "pro_comeback")
BUNDLE = "com.example.storekeeper.demo"
APP_APPLE_ID = 6_450_000_001
# The demo app's key as the simulator's run generated and exported it (read in `main`).
KEY_ID = ""
ISSUER = ""
# The app's auto-renewable product, sold here as a monthly plan with a 12-month commitment.
COMMITMENT_PRODUCT = "com.example.pro.monthly"
failures: typing.List[str] = []
counts: typing.Dict[str, int] = {}


def count(what: str) -> None:
    counts[what] = counts.get(what, 0) + 1


def sim(method: str, path: str, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(SIM + path, method=method, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        raw = answer.read()
    return json.loads(raw) if raw else None


def sim_refused(method: str, path: str, body) -> typing.Tuple[int, typing.Any]:
    """A /sim call expected to fail: its HTTP status and JSON error (200 and None if it passed)."""
    try:
        sim(method, path, body)
        return 200, None
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw) if raw else None
        except ValueError:
            return error.code, raw.decode(errors="replace")


def payload_of(jws: str) -> dict:
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def model_classes(annotation) -> typing.List[type]:
    """The attrs classes an annotation names (through Optional and List)."""
    found = []
    for arg in typing.get_args(annotation) or ():
        found += model_classes(arg)
    if attr.has(annotation):
        found.append(annotation)
    return found


def unknown_fields(value, cls, where: str) -> typing.List[str]:
    """Keys of `value` (JSON) that `cls` (an attrs model of the library) has no field for."""
    if not isinstance(value, dict):
        return []
    names = {field.name for field in attr.fields(cls)}
    hints = typing.get_type_hints(cls)
    problems = []
    for key, item in value.items():
        if key not in names:
            problems.append(f"{where}.{key}")
            continue
        for inner in model_classes(hints.get(key)):
            for element in item if isinstance(item, list) else [item]:
                problems += unknown_fields(element, inner, f"{where}.{key}")
    return problems


def check_fields(value, cls, where: str) -> None:
    for problem in unknown_fields(value, cls, where):
        failures.append(f"field the library does not know: {problem}")


class Judge:
    """One environment: a verifier (offline and online) and an API client of the library."""

    def __init__(self, environment: Environment, root_der: bytes, private_pem: bytes):
        self.environment = environment
        app_id = APP_APPLE_ID if environment == Environment.PRODUCTION else None
        self.offline = SignedDataVerifier([root_der], False, environment, BUNDLE, app_id)
        self.online = SignedDataVerifier([root_der], True, environment, BUNDLE, app_id)
        self.client = CheckedClient(private_pem, environment)

    def verify(self, kind: str, signed: str, where: str):
        decode, model = {
            "transaction": ("verify_and_decode_signed_transaction", JWSTransactionDecodedPayload),
            "renewal info": ("verify_and_decode_renewal_info", JWSRenewalInfoDecodedPayload),
            "notification": ("verify_and_decode_notification", ResponseBodyV2DecodedPayload),
            "app transaction": ("verify_and_decode_app_transaction", AppTransaction),
            "realtime request": ("verify_and_decode_realtime_request", DecodedRealtimeRequestBody),
        }[kind]
        decoded = None
        for name, verifier in [("offline", self.offline), ("online", self.online)]:
            try:
                decoded = getattr(verifier, decode)(signed)
                count(f"{kind} verified ({name})")
            except VerificationException as error:
                failures.append(f"{where}: {kind} refused by SignedDataVerifier ({name}): {error.status.name}")
        check_fields(payload_of(signed), model, f"{where} {kind}")
        if kind == "notification" and decoded is not None and decoded.data is not None:
            data = decoded.data
            if data.signedTransactionInfo:
                self.verify("transaction", data.signedTransactionInfo, f"{where} notification")
            if data.signedRenewalInfo:
                self.verify("renewal info", data.signedRenewalInfo, f"{where} notification")
        if kind == "notification" and decoded is not None and decoded.appData is not None:
            if decoded.appData.signedAppTransactionInfo:
                self.verify("app transaction", decoded.appData.signedAppTransactionInfo, f"{where} notification")
        return decoded


class CheckedClient(AppStoreServerAPIClient):
    """The library's client pointed at the simulator; every answer's JSON is kept and checked
    for fields the library's model does not have."""

    def __init__(self, private_pem: bytes, environment: Environment):
        super().__init__(private_pem, KEY_ID, ISSUER, BUNDLE, environment)
        self._base_url = SIM + ("/sandbox-api" if environment == Environment.SANDBOX else "")
        self.last_json = None

    def _execute_request(self, method, url, params, headers, json, data):
        answer = super()._execute_request(method, url, params, headers, json, data)
        try:
            self.last_json = answer.json()
        except ValueError:
            self.last_json = None
        return answer

    def _make_request(self, path, method, queryParameters, body, destination_class, content_type=None):
        result = super()._make_request(path, method, queryParameters, body, destination_class, content_type)
        if destination_class is not None and self.last_json is not None:
            check_fields(self.last_json, destination_class, f"{method} {path}")
        count("Server API answers deserialised")
        return result


def route_ocsp_to_simulator() -> None:
    """The certificates name an OCSP responder that resolves nowhere (on purpose); the library's
    OCSP requests go to the simulator's /ocsp instead. Only the address is changed."""
    original = verifier_module.requests.post

    def post(url, *args, **kwargs):
        if "storekeeper-simulator.invalid" in url:
            url = SIM + urllib.parse.urlparse(url).path
        return original(url, *args, **kwargs)

    verifier_module.requests.post = post


def check_the_checker() -> None:
    """The unknown-field check must be able to fail, at the top and nested."""
    if not unknown_fields({"environment": "Sandbox", "notAnAppleFieldX": 1}, JWSTransactionDecodedPayload, "self-test"):
        failures.append("the unknown-field check missed a made-up field")
    nested = {"data": [{"lastTransactions": [{"status": 1, "notAnAppleField": 1}]}]}
    if not unknown_fields(nested, StatusResponse, "self-test"):
        failures.append("the unknown-field check missed a made-up nested field")


def expect_error(what: str, call, code: int) -> None:
    """`call` must fail with Apple's error `code`."""
    try:
        call()
        failures.append(f"{what}: accepted, not refused with Apple's {code}")
    except APIException as error:
        if error.raw_api_error == code:
            count("Apple error codes matched")
        else:
            failures.append(f"{what}: {error.http_status_code} {error.raw_api_error}, not Apple's {code}")


def guarded(what: str, check) -> None:
    """Runs one group of checks; an unexpected error fails the group, not the whole run."""
    try:
        check()
    except APIException as error:
        failures.append(f"{what}: {error.http_status_code} {error.raw_api_error} {error.error_message}")
    except Exception as error:  # a deserialisation failure inside the library, or a bug here
        failures.append(f"{what}: {type(error).__name__}: {error}")


def api(method: str, path: str, body=None):
    """The server's API as the demo app's backend calls it."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(API + path, method=method, data=data,
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + APP_KEY})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def same_claims(what: str, ours: str, theirs: str, public_key, audience: str) -> None:
    """Our compact JWS and the library's for the same request: both verify with the key, with
    the same header and the same claims (their `iat` and `nonce` aside, which differ by design)."""
    decoded = [jwt.decode(token, public_key, algorithms=["ES256"], audience=audience) for token in (ours, theirs)]
    headers = [jwt.get_unverified_header(token) for token in (ours, theirs)]
    for claims in decoded:
        if not isinstance(claims.get("iat"), int) or not str(uuid.UUID(claims.get("nonce", ""))) == claims.get("nonce"):
            failures.append(f"{what}: iat or nonce malformed in {claims}")
    mine, library = ({k: v for k, v in d.items() if k not in ("iat", "nonce")} for d in decoded)
    if mine != library or headers[0] != headers[1]:
        failures.append(f"{what}: ours {headers[0]} {mine}, the library's {headers[1]} {library}")
    else:
        count("offer JWS equal to the library's, claim for claim")


def check_offers(private_pem: bytes) -> None:
    """The server's offer signatures as Apple's library makes them: the V1 payload the library
    builds verifies our signature; our V2 and introductory-eligibility JWS carry the same header
    and claims as the library's creators give for the same request, under the same key."""
    private_key = serialization.load_pem_private_key(private_pem, password=None)
    public_key = private_key.public_key()
    device = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": "sandbox"})["deviceId"]
    bought = sim("POST", f"/sim/devices/{device}/purchases", {"productId": OFFER[0]})
    api("POST", "/v1/transactions?wait=30", {"appUserId": "offer-taker", "signedTransaction": bought["signedTransaction"]})
    answer = api("POST", "/v1/subscribers/offer-taker/offers/promotional", {"productId": OFFER[0], "offerId": OFFER[1]})
    v1 = answer["v1"]

    # The library's V1 creator, its signing key wrapped to show the bytes it signs.
    creator = PromotionalOfferSignatureCreator(private_pem, KEY_ID, BUNDLE)
    signed_bytes = []

    class Recording:
        def sign(self, data, algorithm):
            signed_bytes.append(data)
            return private_key.sign(data, algorithm)

    creator._signing_key = Recording()
    creator.create_signature(OFFER[0], OFFER[1], answer["appAccountToken"], uuid.UUID(v1["nonce"]), v1["timestamp"])
    try:
        public_key.verify(base64.b64decode(v1["signature"]), signed_bytes[0], ec.ECDSA(hashes.SHA256()))
        count("V1 offer signatures verified over the library's payload")
    except Exception as error:
        failures.append(f"V1 offer signature does not verify over the library's payload: {type(error).__name__} {error}")
    if v1["keyIdentifier"] != KEY_ID:
        failures.append(f"V1 keyIdentifier {v1['keyIdentifier']} is not the key {KEY_ID}")

    transaction = jwt.decode(answer["jws"], options={"verify_signature": False})["transactionId"]
    theirs = PromotionalOfferV2SignatureCreator(private_pem, KEY_ID, ISSUER, BUNDLE).create_signature(OFFER[0], OFFER[1], transaction)
    same_claims("promotional offer V2", answer["jws"], theirs, public_key, "promotional-offer")

    eligibility = api("POST", "/v1/subscribers/offer-taker/offers/introductory", {"productId": OFFER[0]})
    if eligibility.get("eligible") is not False or not eligibility.get("jws"):
        failures.append(f"introductory eligibility of a subscriber: {eligibility}")
        return
    theirs = IntroductoryOfferEligibilitySignatureCreator(private_pem, KEY_ID, ISSUER, BUNDLE).create_signature(OFFER[0], False, transaction)
    same_claims("introductory offer eligibility", eligibility["jws"], theirs, public_key, "introductory-offer-eligibility")


def check_paging(name: str, judge) -> None:
    """A customer with more purchases than a page holds: Get Transaction History and Get
    Notification History each answer in several pages, paged as the library pages them (the
    token of one page sent with the same request for the next), and together hold every one."""
    client = judge.client
    started = int(sim("GET", "/sim/clock")["nowMs"])
    device = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]
    bought = {sim("POST", f"/sim/devices/{device}/purchases", {"productId": "com.example.coins100"})["transaction"]["transaction_id"]
              for _ in range(45)}
    first = sorted(bought)[0]
    pages, found, revision = 0, set(), None
    while True:
        page = client.get_transaction_history(first, revision, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2)
        pages += 1
        found |= {payload_of(signed)["transactionId"] for signed in page.signedTransactions or []}
        if not page.hasMore:
            break
        revision = page.revision
    if pages < 2 or found != bought:
        failures.append(f"{name} transaction history paging: {pages} pages, {len(found)} of {len(bought)} purchases")
    else:
        count("paged endpoints paged through")
    for _ in range(200):  # the simulator sends each purchase's notification on its own schedule
        if len([n for n in sim("GET", "/sim/notifications") if n.get("transactionId") in bought]) >= len(bought):
            break
        time.sleep(0.05)
    request = NotificationHistoryRequest(startDate=started, endDate=int(sim("GET", "/sim/clock")["nowMs"]) + 60_000, transactionId=first)
    pages, found, token = 0, set(), None
    while True:
        page = client.get_notification_history(token, request)
        pages += 1
        for item in page.notificationHistory or []:
            signed = (payload_of(item.signedPayload).get("data") or {}).get("signedTransactionInfo")
            if signed:
                found.add(payload_of(signed)["transactionId"])
        if not page.hasMore:
            break
        token = page.paginationToken
    if pages < 2 or found != bought:
        failures.append(f"{name} notification history paging: {pages} pages, {len(found)} of {len(bought)} purchases")
    else:
        count("paged endpoints paged through")


def history(client, transaction_id: str, request: TransactionHistoryRequest) -> typing.List[dict]:
    """Every page of Get Transaction History (v2) for `request`, decoded, in Apple's order."""
    found, revision = [], None
    while True:
        page = client.get_transaction_history(transaction_id, revision, request, GetTransactionHistoryVersion.V2)
        found += [payload_of(signed) for signed in page.signedTransactions or []]
        if not page.hasMore:
            return found
        revision = page.revision


def raw_history(client, transaction_id: str, params: typing.Dict[str, typing.List[str]]):
    """Get Transaction History with query values the library's types cannot express."""
    return client._make_request(f"/inApps/v2/history/{transaction_id}", "GET", params, None, HistoryResponse, None)


def check_history_filters(name: str, client, subscription: str, app_transaction_id: str) -> None:
    """Each Get Transaction History parameter narrows or orders the customer's history as Apple
    documents, and a bad value is Apple's error code for it."""
    everything = history(client, subscription, TransactionHistoryRequest())
    ids = [t["transactionId"] for t in everything]
    if len(set(t["productId"] for t in everything)) < 3:
        failures.append(f"{name} history: too few products bought ({len(everything)} transactions) to test the filters")
        return

    def expect(label: str, request: TransactionHistoryRequest, keep) -> None:
        got = [t["transactionId"] for t in history(client, subscription, request)]
        wanted = [t["transactionId"] for t in everything if keep(t)]
        if got != wanted:
            failures.append(f"{name} history {label}: got {got}, expected {wanted}")
        else:
            count("history filters honoured")

    coins, removeads = "com.example.coins100", "com.example.removeads"
    expect("productId", TransactionHistoryRequest(productIds=[coins]), lambda t: t["productId"] == coins)
    expect("two productIds", TransactionHistoryRequest(productIds=[coins, removeads]), lambda t: t["productId"] in (coins, removeads))
    expect("productType AUTO_RENEWABLE", TransactionHistoryRequest(productTypes=[ProductType.AUTO_RENEWABLE]),
           lambda t: t["type"] == "Auto-Renewable Subscription")
    expect("productType NON_RENEWABLE", TransactionHistoryRequest(productTypes=[ProductType.NON_RENEWABLE]),
           lambda t: t["type"] == "Non-Renewing Subscription")
    expect("productTypes CONSUMABLE and NON_CONSUMABLE",
           TransactionHistoryRequest(productTypes=[ProductType.CONSUMABLE, ProductType.NON_CONSUMABLE]),
           lambda t: t["type"] in ("Consumable", "Non-Consumable"))
    expect("revoked=true", TransactionHistoryRequest(revoked=True), lambda t: "revocationDate" in t)
    expect("revoked=false", TransactionHistoryRequest(revoked=False), lambda t: "revocationDate" not in t)
    expect("inAppOwnershipType PURCHASED", TransactionHistoryRequest(inAppOwnershipType=InAppOwnershipType.PURCHASED),
           lambda t: t["inAppOwnershipType"] == "PURCHASED")
    expect("inAppOwnershipType FAMILY_SHARED", TransactionHistoryRequest(inAppOwnershipType=InAppOwnershipType.FAMILY_SHARED),
           lambda t: t["inAppOwnershipType"] == "FAMILY_SHARED")
    renewing = [t for t in everything if t["type"] == "Auto-Renewable Subscription"]
    groups = {t.get("subscriptionGroupIdentifier") for t in renewing}
    if not renewing or None in groups:
        failures.append(f"{name} history: a subscription transaction has no subscriptionGroupIdentifier")
    else:
        group = sorted(groups)[0]
        expect("subscriptionGroupIdentifier", TransactionHistoryRequest(subscriptionGroupIdentifiers=[group]),
               lambda t: t.get("subscriptionGroupIdentifier") == group)
    dates = sorted({t["purchaseDate"] for t in everything})
    start, end = dates[len(dates) // 2], dates[-1]
    expect("startDate and endDate", TransactionHistoryRequest(startDate=start, endDate=end),
           lambda t: start <= t["purchaseDate"] < end)

    # DESCENDING is ASCENDING reversed; the order is by last change, so a refund moves the
    # one-time purchase after the purchases made after it and never changed.
    descending = [t["transactionId"] for t in history(client, subscription, TransactionHistoryRequest(sort=Order.DESCENDING))]
    if descending != list(reversed(ids)):
        failures.append(f"{name} history: DESCENDING is not ASCENDING reversed ({descending} vs {ids})")
    else:
        count("history filters honoured")
    ascending = [t["transactionId"] for t in history(client, subscription, TransactionHistoryRequest(sort=Order.ASCENDING))]
    if ascending != ids:
        failures.append(f"{name} history: ASCENDING is not the default order")
    refunded = next((t for t in everything if t["productId"] == removeads), None)
    untouched = [t for t in everything if t["productId"] == "com.example.legacy.pack"]
    if refunded is not None and untouched and ids.index(refunded["transactionId"]) < ids.index(untouched[0]["transactionId"]):
        failures.append(f"{name} history: a refunded purchase kept its place; Apple sorts by the last change")

    # The app transaction id names the same customer.
    by_app_transaction = [t["transactionId"] for t in history(client, app_transaction_id, TransactionHistoryRequest())]
    if by_app_transaction != ids:
        failures.append(f"{name} history by app transaction id: {by_app_transaction}, not {ids}")

    for what, params, code in [
        ("sort", {"sort": ["SIDEWAYS"]}, 4000021),
        ("productType", {"productType": ["SUBSCRIPTION"]}, 4000022),
        ("productId", {"productId": [""]}, 4000023),
        ("subscriptionGroupIdentifier", {"subscriptionGroupIdentifier": [""]}, 4000024),
        ("inAppOwnershipType", {"inAppOwnershipType": ["BORROWED"]}, 4000026),
        ("revoked", {"revoked": ["maybe"]}, 4000030),
        ("startDate", {"startDate": ["yesterday"]}, 4000015),
        ("endDate", {"endDate": ["-5"]}, 4000016),
        ("startDate after endDate", {"startDate": ["2000"], "endDate": ["1000"]}, 4000013),
        ("revision", {"revision": ["not-a-revision"]}, 4000005),
    ]:
        expect_error(f"{name} history with a bad {what}", lambda params=params: raw_history(client, subscription, params), code)


def check_statuses_while_running(name: str, client, subscription: str, product: dict) -> None:
    """Auto-renew is off but the period runs: the renewal info states the price of the next
    period and no expiration intent, and the status filter keeps only what it names."""
    statuses = client.get_all_subscription_statuses(subscription)
    last = [item for group in statuses.data or [] for item in group.lastTransactions or [] if item.originalTransactionId == subscription]
    if len(last) != 1:
        failures.append(f"{name} statuses: the subscription is listed {len(last)} times")
        return
    renewal = payload_of(last[0].signedRenewalInfo)
    if renewal.get("autoRenewStatus") != 0 or last[0].rawStatus != 1:
        failures.append(f"{name} statuses: expected an active subscription with auto-renew off, got {renewal.get('autoRenewStatus')} {last[0].rawStatus}")
    if "expirationIntent" in renewal:
        failures.append(f"{name} renewal info: expirationIntent {renewal['expirationIntent']} while the subscription has not expired")
    if renewal.get("renewalPrice") != product["priceMicros"] // 1000 or renewal.get("currency") != product["currency"]:
        failures.append(f"{name} renewal info: renewalPrice {renewal.get('renewalPrice')} {renewal.get('currency')}, "
                        f"not {product['priceMicros'] // 1000} {product['currency']}")
    else:
        count("renewal infos with renewalPrice")
    if not payload_of(last[0].signedTransactionInfo).get("subscriptionGroupIdentifier"):
        failures.append(f"{name} statuses: the signed transaction has no subscriptionGroupIdentifier")
    expect_statuses(name, client, subscription, [Status.ACTIVE], True)
    expect_statuses(name, client, subscription, [Status.EXPIRED], False)
    expect_statuses(name, client, subscription, [Status.EXPIRED, Status.ACTIVE], True)
    for value in ["7", "active"]:
        expect_error(f"{name} statuses with status={value}", lambda value=value: client._make_request(
            f"/inApps/v1/subscriptions/{subscription}", "GET", {"status": [value]}, None, StatusResponse, None), 4000031)


def expect_statuses(name: str, client, subscription: str, status: typing.List[Status], listed: bool) -> None:
    answer = client.get_all_subscription_statuses(subscription, status)
    items = [item for group in answer.data or [] for item in group.lastTransactions or []]
    wanted = {s.value for s in status}
    if any(item.rawStatus not in wanted for item in items):
        failures.append(f"{name} statuses filtered by {sorted(wanted)}: got statuses {[item.rawStatus for item in items]}")
    elif any(item.originalTransactionId == subscription for item in items) != listed:
        failures.append(f"{name} statuses filtered by {sorted(wanted)}: the subscription is {'missing' if listed else 'listed'}")
    else:
        count("status filters honoured")


def check_statuses_after_expiry(name: str, client, subscription: str) -> None:
    """Once the period ends without renewal, the subscription is expired (status 2) and its
    renewal info says why: the customer turned auto-renew off (1)."""
    sim("POST", "/sim/clock/advance", {"seconds": 1_000})
    expect_statuses(name, client, subscription, [Status.EXPIRED], True)
    expect_statuses(name, client, subscription, [Status.ACTIVE, Status.BILLING_RETRY], False)
    answer = client.get_all_subscription_statuses(subscription, [Status.EXPIRED])
    for group in answer.data or []:
        for item in group.lastTransactions or []:
            intent = payload_of(item.signedRenewalInfo).get("expirationIntent")
            if intent != 1:
                failures.append(f"{name} renewal info after expiry: expirationIntent {intent}, not 1 (customer cancelled)")


def check_commitment(name: str, judge: Judge, device: str, subscription: str, product: dict) -> None:
    """A monthly plan with a 12-month commitment: each payment, the purchase and every renewal,
    says which of the twelve it is, when its commitment ends and what the commitment costs; the
    thirteenth starts a new commitment. The renewal info says how the commitment renews."""
    client = judge.client
    price = product["priceMicros"] // 1000 * 12
    payments = sorted((tx["transaction_id"] for tx in sim("GET", f"/sim/devices/{device}/transactions")
                       if tx.get("original_transaction_id") == subscription), key=int)
    decoded = [judge.verify("transaction", client.get_transaction_info(tx_id).signedTransactionInfo,
                            f"{name} commitment payment {index + 1}") for index, tx_id in enumerate(payments)]
    numbers = set()
    for index, tx in enumerate(decoded):
        if tx is None:
            continue
        where = f"{name} commitment payment {index + 1} ({payments[index]})"
        info = tx.commitmentInfo
        if tx.rawBillingPlanType != "MONTHLY" or info is None or info.totalBillingPeriods != 12:
            failures.append(f"{where}: billingPlanType {tx.rawBillingPlanType}, commitmentInfo {info}; not MONTHLY of 12 periods")
            continue
        first = decoded[index - index % 12]
        ends = None if first is None else first.purchaseDate + 12 * (first.expiresDate - first.purchaseDate)
        if info.billingPeriodNumber != index % 12 + 1:
            failures.append(f"{where}: billingPeriodNumber {info.billingPeriodNumber}, not {index % 12 + 1}")
        elif info.commitmentPrice != price:
            failures.append(f"{where}: commitmentPrice {info.commitmentPrice}, not {price} (12 monthly payments)")
        elif ends is not None and abs(info.commitmentExpiresDate - ends) > 1:  # ms rounding of each date
            failures.append(f"{where}: commitmentExpiresDate {info.commitmentExpiresDate}, not {ends} (12 periods after its start)")
        else:
            numbers.add(info.billingPeriodNumber)
            count("commitment payments signed")
    if 2 not in numbers:
        failures.append(f"{name} commitment: no payment numbered 2 among {len(payments)}; the subscription did not renew")

    statuses = client.get_all_subscription_statuses(subscription)
    last = [item for group in statuses.data or [] for item in group.lastTransactions or [] if item.originalTransactionId == subscription]
    for item in last:
        renewal = judge.verify("renewal info", item.signedRenewalInfo, f"{name} commitment statuses")
        latest = judge.verify("transaction", item.signedTransactionInfo, f"{name} commitment statuses")
        if renewal is None or latest is None or latest.commitmentInfo is None:
            continue
        info = renewal.commitmentInfo
        if renewal.rawRenewalBillingPlanType != "MONTHLY" or info is None:
            failures.append(f"{name} commitment renewal info: renewalBillingPlanType {renewal.rawRenewalBillingPlanType}, commitmentInfo {info}")
        elif (info.commitmentAutoRenewProductId != product["productId"] or info.rawCommitmentRenewalBillingPlanType != "MONTHLY"
              or info.rawCommitmentAutoRenewStatus != renewal.rawAutoRenewStatus or info.commitmentRenewalPrice != price
              or info.commitmentRenewalDate != latest.commitmentInfo.commitmentExpiresDate):
            failures.append(f"{name} commitment renewal info: {info} (auto-renew {renewal.rawAutoRenewStatus}, "
                            f"commitment ends {latest.commitmentInfo.commitmentExpiresDate}, price {price})")
        else:
            count("commitment renewal infos signed")
    if not last:
        failures.append(f"{name} commitment: the subscription has no status")


def check_plans_codes_and_prices(name: str, judge: Judge) -> None:
    """The StoreKit paths of 2026: a commitment product bought upfront for the year, a price
    increase announced and agreed to (the renewal info's priceIncreaseStatus 0, then 1), an offer
    code redeemed in the sheet (offer type 3 under the code's reference name)."""
    client = judge.client
    device = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]
    upfront = sim("POST", f"/sim/devices/{device}/purchases", {"productId": COMMITMENT_PRODUCT, "billingPlanType": "BILLED_UPFRONT"})
    tx = judge.verify("transaction", upfront["signedTransaction"], f"{name} upfront plan")
    if tx is not None and (tx.rawBillingPlanType != "BILLED_UPFRONT" or tx.commitmentInfo is not None):
        failures.append(f"{name} upfront plan: billingPlanType {tx.rawBillingPlanType}, commitmentInfo {tx.commitmentInfo}")
    elif tx is not None:
        count("upfront plans signed")
    original = upfront["transaction"]["original_transaction_id"]
    for step, expected in [("price-increase", 0), ("price-increase/consent", 1)]:
        sim("POST", f"/sim/subscriptions/{original}/{step}", {"priceMicros": 9_990_000} if step == "price-increase" else None)
        statuses = client.get_all_subscription_statuses(original)
        infos = [judge.verify("renewal info", item.signedRenewalInfo, f"{name} {step} statuses")
                 for group in statuses.data or [] for item in group.lastTransactions or [] if item.originalTransactionId == original]
        if [info.priceIncreaseStatus if info else None for info in infos] != [expected]:
            failures.append(f"{name} {step}: priceIncreaseStatus {[info.priceIncreaseStatus if info else None for info in infos]}, not [{expected}]")
        else:
            count("price increase renewal infos signed")
    code = f"SPRING-{name.upper()}"
    sim("POST", f"/sim/apps/{BUNDLE}/offer-codes",
        {"code": code, "productId": COMMITMENT_PRODUCT, "referenceName": "spring", "discountType": "FREE_TRIAL", "period": "P1W"})
    other = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]
    redeemed = sim("POST", f"/sim/devices/{other}/offer-code-redemptions", {"code": code})
    tx = judge.verify("transaction", client.get_transaction_info(redeemed["transaction"]["transaction_id"]).signedTransactionInfo,
                      f"{name} offer code")
    if tx is not None and (tx.rawOfferType != 3 or tx.offerIdentifier != "spring"):
        failures.append(f"{name} offer code: offerType {tx.rawOfferType}, offerIdentifier {tx.offerIdentifier}")
    elif tx is not None:
        count("offer code redemptions signed")


def check_refunds(name: str, judge: Judge) -> None:
    """Each revocation is signed with its type and share: a refund of 25% is REFUND_PRORATED
    25000, a refund without a body REFUND_FULL 100000, Family Sharing stopped FAMILY_REVOKE
    100000; a reversed refund has neither. A share outside 1...100000 is refused."""
    client = judge.client
    device = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]
    member = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]

    def buy(product: str) -> str:
        return sim("POST", f"/sim/devices/{device}/purchases", {"productId": product})["transaction"]["transaction_id"]

    prorated, full, reversed_ = buy("com.example.coins100"), buy("com.example.coins100"), buy("com.example.coins100")
    shared = sim("POST", f"/sim/devices/{member}/family-share", {"transactionId": buy("com.example.removeads")})["transaction"]["transaction_id"]
    for bad in [0, 100_001, 2.5, "25000", -1]:
        status, error = sim_refused("POST", f"/sim/transactions/{prorated}/refund", {"percentage": bad})
        code = error.get("error", {}).get("code") if isinstance(error, dict) else None
        if status != 400 or code != "invalid_percentage":
            failures.append(f"{name}: a refund of percentage {bad!r} got {status} {error}, not 400 invalid_percentage")
        else:
            count("bad refund percentages refused")
    sim("POST", f"/sim/transactions/{prorated}/refund", {"percentage": 25_000})
    sim("POST", f"/sim/transactions/{full}/refund")
    sim("POST", f"/sim/transactions/{reversed_}/refund", {"percentage": 50_000})
    sim("POST", f"/sim/transactions/{reversed_}/reverse-refund")
    sim("POST", f"/sim/transactions/{shared}/revoke")
    for tx_id, kind, share in [(prorated, "REFUND_PRORATED", 25_000), (full, "REFUND_FULL", 100_000),
                               (shared, "FAMILY_REVOKE", 100_000), (reversed_, None, None)]:
        where = f"{name} {kind or 'reversed refund'} of {tx_id}"
        decoded = judge.verify("transaction", client.get_transaction_info(tx_id).signedTransactionInfo, where)
        if decoded is None:
            continue
        if decoded.rawRevocationType != kind or decoded.revocationPercentage != share or (decoded.revocationDate is None) != (kind is None):
            failures.append(f"{where}: revocationType {decoded.rawRevocationType}, revocationPercentage {decoded.revocationPercentage}, "
                            f"revocationDate {decoded.revocationDate}; not {kind} {share}")
        else:
            count("revocations signed with their type and share")
    # Get Refund History lists the two refunds still standing, each with its share.
    standing = {}
    for signed in client.get_refund_history(prorated, None).signedTransactions or []:
        decoded = judge.verify("transaction", signed, f"{name} refund history")
        if decoded is not None:
            standing[decoded.transactionId] = (decoded.rawRevocationType, decoded.revocationPercentage)
    if standing != {prorated: ("REFUND_PRORATED", 25_000), full: ("REFUND_FULL", 100_000)}:
        failures.append(f"{name} refund history: {standing}")


def notifications(client, request: NotificationHistoryRequest) -> typing.List[typing.Tuple[dict, typing.Any]]:
    """Every page of Get Notification History for `request`: (decoded payload, history item)."""
    found, token = [], None
    while True:
        page = client.get_notification_history(token, request)
        found += [(payload_of(item.signedPayload), item) for item in page.notificationHistory or []]
        if not page.hasMore:
            return found
        token = page.paginationToken


def check_notification_filters(name: str, client, device_transactions: typing.Set[str], window, other_token) -> None:
    """Type, subtype, customer and failures-only each narrow the notification history; the
    body is checked as Apple documents it."""
    start, end = window

    def expect(label: str, found, keep, at_least: int = 1) -> None:
        wrong = [payload.get("notificationType") for payload, item in found if not keep(payload, item)]
        if wrong or len(found) < at_least:
            failures.append(f"{name} notification history {label}: {len(found)} found, {len(wrong)} not matching ({wrong[:5]})")
        else:
            count("notification filters honoured")

    def transaction_of(payload: dict):
        signed = (payload.get("data") or {}).get("signedTransactionInfo")
        return payload_of(signed).get("transactionId") if signed else None

    renewals = notifications(client, NotificationHistoryRequest(startDate=start, endDate=end, notificationType=NotificationTypeV2.DID_RENEW))
    expect("by type", renewals, lambda payload, _: payload["notificationType"] == "DID_RENEW", at_least=2)
    recovered = notifications(client, NotificationHistoryRequest(
        startDate=start, endDate=end, notificationType=NotificationTypeV2.DID_RENEW, notificationSubtype=Subtype.BILLING_RECOVERY))
    expect("by type and subtype", recovered, lambda payload, _: payload.get("subtype") == "BILLING_RECOVERY")
    if len(recovered) >= len(renewals):
        failures.append(f"{name} notification history: the subtype did not narrow DID_RENEW")
    off = notifications(client, NotificationHistoryRequest(
        startDate=start, endDate=end, notificationType=NotificationTypeV2.DID_CHANGE_RENEWAL_STATUS,
        notificationSubtype=Subtype.AUTO_RENEW_DISABLED))
    expect("auto-renew off", off, lambda payload, _: payload.get("subtype") == "AUTO_RENEW_DISABLED")

    # A purchase by another customer whose notification is lost (never delivered).
    other = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]
    sim("PUT", "/sim/notifications/faults", {"drop": 1})
    lost = sim("POST", f"/sim/devices/{other}/purchases", {"productId": "com.example.coins100"})["transaction"]["transaction_id"]
    for _ in range(100):
        if any(n.get("transactionId") == lost for n in sim("GET", "/sim/notifications")):
            break
        time.sleep(0.05)
    end = int(sim("GET", "/sim/clock")["nowMs"]) + 60_000
    mine = notifications(client, NotificationHistoryRequest(startDate=start, endDate=end, transactionId=next(iter(device_transactions))))
    expect("by customer", mine, lambda payload, _: transaction_of(payload) in device_transactions, at_least=5)
    failed = notifications(client, NotificationHistoryRequest(startDate=start, endDate=end, onlyFailures=True))
    expect("only failures", failed, lambda _, item: all(a.rawSendAttemptResult != "SUCCESS" for a in item.sendAttempts or []))
    if lost not in {transaction_of(payload) for payload, _ in failed}:
        failures.append(f"{name} notification history: the lost notification of {lost} is not among the failures")
    theirs = notifications(client, NotificationHistoryRequest(startDate=start, endDate=end, transactionId=lost, onlyFailures=True))
    expect("by customer, only failures", theirs, lambda payload, _: transaction_of(payload) == lost)

    now = int(time.time() * 1000)
    for what, request, code in [
        ("no startDate", NotificationHistoryRequest(endDate=end), 4000015),
        ("no endDate", NotificationHistoryRequest(startDate=start), 4000016),
        ("startDate equal to endDate", NotificationHistoryRequest(startDate=start, endDate=start), 4000013),
        ("startDate 400 days back", NotificationHistoryRequest(startDate=now - 400 * 86_400_000, endDate=end), 4000012),
        ("type and transactionId", NotificationHistoryRequest(
            startDate=start, endDate=end, notificationType=NotificationTypeV2.REFUND, transactionId=lost), 4000019),
        ("subtype without type", NotificationHistoryRequest(startDate=start, endDate=end, notificationSubtype=Subtype.VOLUNTARY), 4000018),
        ("subtype of another type", NotificationHistoryRequest(
            startDate=start, endDate=end, notificationType=NotificationTypeV2.SUBSCRIBED, notificationSubtype=Subtype.VOLUNTARY), 4000018),
        ("malformed transactionId", NotificationHistoryRequest(startDate=start, endDate=end, transactionId="not-a-transaction"), 4000006),
        ("unknown transactionId", NotificationHistoryRequest(startDate=start, endDate=end, transactionId="999999999999"), 4040010),
    ]:
        expect_error(f"{name} notification history with {what}", lambda request=request: client.get_notification_history(None, request), code)
    everything = NotificationHistoryRequest(startDate=start, endDate=end)
    expect_error(f"{name} notification history with a made-up token", lambda: client.get_notification_history("garbage", everything), 4000014)
    if other_token:
        # Apple wants the same body with every page.
        expect_error(f"{name} notification history with another request's token",
                     lambda: client.get_notification_history(other_token, NotificationHistoryRequest(startDate=start, endDate=end, onlyFailures=True)),
                     4000017)


def check_malformed_ids(name: str, client, subscription: str, coins: str, app_transaction_id: str) -> None:
    """An id that is not a number is Apple's 400 4000006 (4000008 where an original transaction
    id is expected), not a 404; an app transaction id where one transaction is meant is
    4000048; an order id is not a transaction id, so any unknown one is status 1."""
    bad = "not-a-transaction"
    consumption = ConsumptionRequest(customerConsented=True, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED)
    consumption_v1 = ConsumptionRequestV1(
        customerConsented=True, consumptionStatus=ConsumptionStatus.UNDECLARED, platform=Platform.APPLE, sampleContentProvided=False,
        deliveryStatus=DeliveryStatusV1.DELIVERED_AND_WORKING_PROPERLY, appAccountToken="", accountTenure=AccountTenure.UNDECLARED,
        playTime=PlayTime.UNDECLARED, lifetimeDollarsRefunded=LifetimeDollarsRefunded.UNDECLARED,
        lifetimeDollarsPurchased=LifetimeDollarsPurchased.UNDECLARED, userStatus=UserStatus.UNDECLARED)
    extension = ExtendRenewalDateRequest(extendByDays=1, extendReasonCode=ExtendReasonCode.UNDECLARED, requestIdentifier=str(uuid.uuid4()))
    for what, call, code in [
        ("transaction info", lambda: client.get_transaction_info(bad), 4000006),
        ("history", lambda: client.get_transaction_history(bad, None, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2), 4000006),
        ("subscription statuses", lambda: client.get_all_subscription_statuses(bad), 4000006),
        ("refund history", lambda: client.get_refund_history(bad, None), 4000006),
        ("app transaction info", lambda: client.get_app_transaction_info(bad), 4000006),
        ("finish transaction", lambda: client.finish_transaction(bad), 4000006),
        ("consumption v1", lambda: client.send_consumption_data(bad, consumption_v1), 4000006),
        ("consumption v2", lambda: client.send_consumption_information(bad, consumption), 4000006),
        ("set app account token", lambda: client.set_app_account_token(
            bad, UpdateAppAccountTokenRequest(appAccountToken=str(uuid.uuid4()))), 4000006),
        ("extend renewal date", lambda: client.extend_subscription_renewal_date(bad, extension), 4000008),
        ("history of an unknown id", lambda: client.get_transaction_history(
            "999999999999", None, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2), 4040010),
        ("statuses of an unknown id", lambda: client.get_all_subscription_statuses("999999999999"), 4040010),
        ("transaction info by app transaction id", lambda: client.get_transaction_info(app_transaction_id), 4000048),
        ("finish by app transaction id", lambda: client.finish_transaction(app_transaction_id), 4000048),
    ]:
        expect_error(f"{name} {what}", call, code)
    for order in ["no-such-order", "999999999999"]:
        answer = client.look_up_order_id(order)
        if answer.status != OrderLookupStatus.INVALID or answer.signedTransactions:
            failures.append(f"{name} order lookup of {order!r}: status {answer.rawStatus}, not 1 (invalid)")
        else:
            count("unknown order ids answered status 1")
    # The subscription is still found by its own id after all this.
    client.get_transaction_info(subscription)
    client.get_transaction_info(coins)



def png(width: int, height: int) -> bytes:
    """A real PNG (RGB, no transparency) of one colour."""
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return len(payload).to_bytes(4, "big") + kind + payload + zlib.crc32(kind + payload).to_bytes(4, "big")
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    rows = b"".join(b"\x00" + b"\x20\x60\xa0" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def check_retention_configuration(judges: typing.Dict[str, "Judge"], sandbox_subscription: str) -> None:
    """Retention Messaging's configuration calls, made by the library's own client: images,
    messages, default messages, the realtime URL, the performance test; Apple's codes for what
    it refuses."""
    for name, judge in judges.items():
        client = judge.client
        full, bullet, message = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
        client.upload_image(uuid.UUID(full), png(3840, 160), ImageSize.FULL_SIZE)
        client.upload_image(uuid.UUID(bullet), png(48, 48), ImageSize.BULLET_POINT)
        expect_error(f"{name} the same image twice", lambda: client.upload_image(uuid.UUID(full), png(3840, 160), ImageSize.FULL_SIZE), 4090000)
        expect_error(f"{name} an image of the wrong size", lambda: client.upload_image(uuid.uuid4(), png(100, 100), ImageSize.FULL_SIZE), 4000216)
        images = {str(item.imageIdentifier): item for item in client.get_image_list().imageIdentifiers or []}
        if {full, bullet} - set(images) or any(images[i].imageState != ImageState.APPROVED for i in (full, bullet)):
            failures.append(f"{name}: the image list {images} lacks the uploaded images, approved")
        client.upload_message(uuid.UUID(message), UploadMessageRequestBody(
            header="Before you go", body="Your plan keeps every feature you use.",
            image=UploadMessageImage(imageIdentifier=uuid.UUID(full), altText="A chart"), headerPosition=HeaderPosition.ABOVE_IMAGE,
            bulletPoints=[BulletPoint(text="Sync everywhere", imageIdentifier=uuid.UUID(bullet), altText="A check mark")]))
        messages = {str(item.messageIdentifier): item for item in client.get_message_list().messageIdentifiers or []}
        if messages.get(message) is None or messages[message].messageState != MessageState.APPROVED:
            failures.append(f"{name}: the message list {messages} lacks the uploaded message, approved")
        client.configure_default_message("com.example.pro.monthly", "en-US", DefaultConfigurationRequest(messageIdentifier=uuid.UUID(message)))
        if str(client.get_default_message("com.example.pro.monthly", "en-US").messageIdentifier) != message:
            failures.append(f"{name}: the default message is not the one configured")
        expect_error(f"{name} deleting an image in use", lambda: client.delete_image(uuid.UUID(bullet)), 4030019)
        client.delete_default_message("com.example.pro.monthly", "en-US")
        expect_error(f"{name} a deleted default message", lambda: client.get_default_message("com.example.pro.monthly", "en-US"), 4040020)
        client.delete_message(uuid.UUID(message))
        client.delete_image(uuid.UUID(bullet))
        expect_error(f"{name} a deleted image", lambda: client.delete_image(uuid.UUID(bullet)), 4040014)
        count("Retention Messaging configuration calls checked")

    # The sandbox URL, Apple's performance test against this server, then production, which
    # Apple takes only after a passing test.
    sandbox, production = judges["sandbox"].client, judges["production"].client
    url = API + "/v1/retention/demo"
    sandbox.configure_realtime_url(RealtimeUrlRequest(realtimeURL=url))
    if sandbox.get_realtime_url().realtimeURL != url:
        failures.append("sandbox: the realtime URL is not the one configured")
    started = sandbox.initiate_performance_test(PerformanceTestRequest(originalTransactionId=sandbox_subscription))
    sim("GET", f"/sim/retention/performance-tests/{started.requestId}/finished")
    result = sandbox.get_performance_test_results(started.requestId)
    if result.result not in (PerformanceTestStatus.PASS, PerformanceTestStatus.FAIL) or result.numPending != 0 or result.target != url:
        failures.append(f"the performance test's result: {result}")
    print(f"apple-library: Retention Messaging performance test against the server: {result.rawResult}, "
          f"success rate {result.successRate} %, p99 {result.responseTimes.p99 if result.responseTimes else None} ms")
    if result.result == PerformanceTestStatus.PASS:
        production.configure_realtime_url(RealtimeUrlRequest(realtimeURL=url))
        if production.get_realtime_url().realtimeURL != url:
            failures.append("production: the realtime URL is not the one configured")
    else:
        expect_error("a production URL without a passing test",
                     lambda: production.configure_realtime_url(RealtimeUrlRequest(realtimeURL=url)), 4030026)
    count("Retention Messaging performance tests run")


def main() -> int:
    # Consumption v1 is what the simulator serves; the library marks it deprecated for v2.
    warnings.simplefilter("ignore", DeprecationWarning)
    check_the_checker()
    route_ocsp_to_simulator()
    # The key `serve --simulator` generated for the demo app, as it exported it: a team points
    # its own tools at the simulator with nothing registered by hand.
    global KEY_ID, ISSUER
    with open(os.path.join(KEYS, "keys.json")) as listing:
        exported = next(entry for entry in json.load(listing) if entry["bundleId"] == BUNDLE)
    KEY_ID, ISSUER = exported["keyId"], exported["issuerId"]
    with open(os.path.join(KEYS, exported["file"]), "rb") as pem:
        private_pem = pem.read()
    app = next(a for a in sim("GET", "/sim/apps") if a["bundleId"] == BUNDLE)
    # The demo app has its Apple id: production notifications and answers carry it.
    if app.get("appAppleId") != APP_APPLE_ID or exported.get("appAppleId") != APP_APPLE_ID:
        failures.append(f"the demo app's appAppleId: simulator {app.get('appAppleId')}, exported {exported.get('appAppleId')}")
    # The simulator's `commitmentProductIds`, set at run time: `serve --simulator` takes no
    # simulator configuration of its own.
    commitment = set(sim("GET", "/sim/commitment-products")["productIds"]) | {COMMITMENT_PRODUCT}
    sim("PUT", "/sim/commitment-products", {"productIds": sorted(commitment)})
    with urllib.request.urlopen(SIM + "/sim/pki/root.pem", timeout=30) as answer:
        root_pem = answer.read().decode()
    root_der = base64.b64decode("".join(line for line in root_pem.splitlines() if "-----" not in line))
    products = [product["productId"] for product in app["products"]]

    guarded("offer signatures", lambda: check_offers(private_pem))

    # Retention Messaging, before the simulator's clock runs ahead of the server's: the realtime
    # request the simulator signs and posts to the server (which checks it is fresh and answers
    # 200), judged by the library's own realtime verifier.
    sim("PUT", "/sim/retention/url", {"bundleId": BUNDLE, "url": API + "/v1/retention/demo", "timeoutSeconds": 60})
    for environment, name in [(Environment.SANDBOX, "sandbox"), (Environment.PRODUCTION, "production")]:
        device = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]
        monthly = sim("POST", f"/sim/devices/{device}/purchases", {"productId": "com.example.pro.monthly"})
        original = monthly["transaction"]["original_transaction_id"]
        exchange = sim("POST", f"/sim/subscriptions/{original}/retention-request", {"locale": "en_US"})
        Judge(environment, root_der, private_pem).verify("realtime request", exchange["signedPayload"], f"{name} retention request")
        if exchange.get("status") != 200 or exchange.get("problems"):
            failures.append(f"{name}: the server's answer to the realtime request: {exchange.get('status')} {exchange.get('problems')}")
        if name == "sandbox":
            sandbox_subscription = original
    judges = {"sandbox": Judge(Environment.SANDBOX, root_der, private_pem), "production": Judge(Environment.PRODUCTION, root_der, private_pem)}
    guarded("retention configuration", lambda: check_retention_configuration(judges, sandbox_subscription))

    for environment, name in [(Environment.SANDBOX, "sandbox"), (Environment.PRODUCTION, "production")]:
        judge = Judge(environment, root_der, private_pem)
        started_ms = int(sim("GET", "/sim/clock")["nowMs"])
        device = sim("POST", "/sim/devices", {"bundleId": BUNDLE, "environment": name})["deviceId"]
        bought = {}
        for product in products:
            purchase = sim("POST", f"/sim/devices/{device}/purchases", {"productId": product, "appAccountToken": str(uuid.uuid4())})
            bought[product] = purchase
            judge.verify("transaction", purchase["signedTransaction"], f"{name} purchase of {product}")
        subscription = bought["com.example.pro.monthly"]["transaction"]["original_transaction_id"]
        one_time = bought["com.example.removeads"]["transaction"]["transaction_id"]
        # A subscription's life, so that renewals, retries, refunds and their notifications exist.
        sim("POST", "/sim/clock/advance", {"seconds": 40 * 86_400})
        sim("POST", f"/sim/subscriptions/{subscription}/billing-failure", {"gracePeriod": True})
        sim("POST", f"/sim/subscriptions/{subscription}/billing-recovery")
        sim("POST", f"/sim/subscriptions/{subscription}/cancel-auto-renew")
        sim("POST", f"/sim/transactions/{one_time}/refund")
        # A refund request: its CONSUMPTION_REQUEST (with the customer's reason) is judged with every notification.
        sim("POST", f"/sim/transactions/{bought['com.example.coins100']['transaction']['transaction_id']}/refund-request",
            {"reason": "UNSATISFIED_WITH_PURCHASE"})
        # Thirteen payments by now (twelve renewals), then a recovered one: two commitments.
        monthly = next(p for p in app["products"] if p["productId"] == COMMITMENT_PRODUCT)
        guarded(f"{name} commitment plan", lambda: check_commitment(name, judge, device, subscription, monthly))
        guarded(f"{name} refunds", lambda: check_refunds(name, judge))
        guarded(f"{name} plans, codes and prices", lambda: check_plans_codes_and_prices(name, judge))
        guarded(f"{name} paging", lambda: check_paging(name, judge))

        receipt = sim("GET", f"/sim/devices/{device}/receipt")["receipt"]
        transaction_ids = {tx["transaction_id"] for tx in sim("GET", f"/sim/devices/{device}/transactions")}
        found = ReceiptUtility().extract_transaction_id_from_app_receipt(receipt)
        if found not in transaction_ids:
            failures.append(f"{name}: ReceiptUtility read {found!r} from the app receipt, not one of the device's transactions")
        else:
            count("app receipts read")

        client = judge.client
        calls = []
        for tx_id in sorted(transaction_ids):
            calls.append((f"transaction info {tx_id}", lambda tx_id=tx_id: client.get_transaction_info(tx_id)))
        calls += [
            ("history v2", lambda: client.get_transaction_history(subscription, None, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2)),
            ("subscription statuses", lambda: client.get_all_subscription_statuses(subscription)),
            ("refund history", lambda: client.get_refund_history(one_time, None)),
            ("order lookup", lambda: client.look_up_order_id(one_time)),
            ("consumption", lambda: client.send_consumption_data(
                bought["com.example.coins100"]["transaction"]["transaction_id"],
                ConsumptionRequestV1(
                    customerConsented=True, consumptionStatus=ConsumptionStatus.PARTIALLY_CONSUMED, platform=Platform.APPLE,
                    sampleContentProvided=False, deliveryStatus=DeliveryStatusV1.DELIVERED_AND_WORKING_PROPERLY, appAccountToken="",
                    accountTenure=AccountTenure.UNDECLARED, playTime=PlayTime.UNDECLARED,
                    lifetimeDollarsRefunded=LifetimeDollarsRefunded.UNDECLARED,
                    lifetimeDollarsPurchased=LifetimeDollarsPurchased.UNDECLARED, userStatus=UserStatus.ACTIVE))),
            ("app transaction", lambda: client.get_app_transaction_info(one_time)),
            ("extend renewal date", lambda: client.extend_subscription_renewal_date(
                subscription, ExtendRenewalDateRequest(
                    extendByDays=3, extendReasonCode=ExtendReasonCode.CUSTOMER_SATISFACTION, requestIdentifier=str(uuid.uuid4())))),
        ]
        test = None
        try:
            test = client.request_test_notification()
            count("Server API answers deserialised")
        except APIException as error:
            failures.append(f"{name} test notification: {error.http_status_code} {error.raw_api_error} {error.error_message}")
        if test is not None:
            calls.append(("test notification status", lambda: client.get_test_notification_status(test.testNotificationToken)))
        answers = {}
        for what, call in calls:
            try:
                answers[what] = call()
            except APIException as error:
                failures.append(f"{name} {what}: {error.http_status_code} {error.raw_api_error} {error.error_message}")
            except Exception as error:  # a deserialisation failure inside the library
                failures.append(f"{name} {what}: {type(error).__name__}: {error}")

        for what, answer in answers.items():
            if what.startswith("transaction info"):
                judge.verify("transaction", answer.signedTransactionInfo, f"{name} {what}")
            elif what == "history v2":
                for signed in answer.signedTransactions or []:
                    judge.verify("transaction", signed, f"{name} {what}")
            elif what == "subscription statuses":
                for group in answer.data or []:
                    for last in group.lastTransactions or []:
                        judge.verify("transaction", last.signedTransactionInfo, f"{name} {what}")
                        judge.verify("renewal info", last.signedRenewalInfo, f"{name} {what}")
            elif what in ("refund history", "order lookup"):
                for signed in answer.signedTransactions or []:
                    judge.verify("transaction", signed, f"{name} {what}")
            elif what == "test notification status" and answer.signedPayload:
                judge.verify("notification", answer.signedPayload, f"{name} {what}")
            elif what == "app transaction":
                decoded = judge.verify("app transaction", answer.signedAppTransactionInfo, f"{name} {what}")
                # The app transaction id names the same customer: it finds the same app transaction.
                if decoded is not None:
                    again = client.get_app_transaction_info(decoded.appTransactionId)
                    if payload_of(again.signedAppTransactionInfo).get("appTransactionId") != decoded.appTransactionId:
                        failures.append(f"{name}: the app transaction id does not find its own app transaction")

        # Send Consumption Information v2: taken as sent; no consent is Apple's 4000035.
        coins = bought["com.example.coins100"]["transaction"]["transaction_id"]
        try:
            client.send_consumption_information(coins, ConsumptionRequest(
                customerConsented=True, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED,
                consumptionPercentage=25_000, refundPreference=RefundPreference.DECLINE))
            count("Server API answers deserialised")
            kept = sim("GET", f"/sim/consumption-v2/{coins}")
            if kept.get("consumptionPercentage") != 25_000 or kept.get("deliveryStatus") != "DELIVERED":
                failures.append(f"{name}: consumption v2 kept {kept}, not what was sent")
        except APIException as error:
            failures.append(f"{name} consumption v2: {error.http_status_code} {error.raw_api_error} {error.error_message}")
        try:
            client.send_consumption_information(
                coins, ConsumptionRequest(customerConsented=False, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED))
            failures.append(f"{name}: consumption v2 without consent was taken")
        except APIException as error:
            if error.raw_api_error != 4000035:
                failures.append(f"{name}: consumption v2 without consent got {error.raw_api_error}, not Apple's 4000035")

        # Finish Transaction: recorded; an unknown id is Apple's 4040010.
        try:
            client.finish_transaction(coins)
            count("Server API answers deserialised")
            if not sim("GET", f"/sim/transactions/{coins}/finished").get("finished"):
                failures.append(f"{name}: Finish Transaction was answered but not recorded")
        except APIException as error:
            failures.append(f"{name} finish transaction: {error.http_status_code} {error.raw_api_error} {error.error_message}")
        try:
            client.finish_transaction("999999999999")
            failures.append(f"{name}: Finish Transaction took an unknown transaction")
        except APIException as error:
            if error.raw_api_error != 4040010:
                failures.append(f"{name}: an unknown transaction got {error.raw_api_error}, not Apple's 4040010")

        # Set App Account Token: the new token is in what is signed afterwards; a bad UUID is
        # Apple's 4000183, a transaction that is not the original 4000187.
        token = str(uuid.uuid4())
        try:
            client.set_app_account_token(subscription, UpdateAppAccountTokenRequest(appAccountToken=token))
            count("Server API answers deserialised")
            after = judge.verify("transaction", client.get_transaction_info(subscription).signedTransactionInfo, f"{name} after the token")
            if after is not None and after.appAccountToken != token:
                failures.append(f"{name}: Set App Account Token did not change the token ({after.appAccountToken} != {token})")
        except APIException as error:
            failures.append(f"{name} set app account token: {error.http_status_code} {error.raw_api_error} {error.error_message}")
        try:
            client.set_app_account_token(subscription, UpdateAppAccountTokenRequest(appAccountToken="not-a-uuid"))
            failures.append(f"{name}: Set App Account Token took a token that is not a UUID")
        except APIException as error:
            if error.raw_api_error != 4000183:
                failures.append(f"{name}: a bad token got {error.http_status_code} {error.raw_api_error}, not Apple's 4000183")
        renewals = [tx["transaction_id"] for tx in sim("GET", f"/sim/devices/{device}/transactions")
                    if tx.get("original_transaction_id") == subscription and tx["transaction_id"] != subscription]
        if renewals:
            try:
                client.set_app_account_token(renewals[0], UpdateAppAccountTokenRequest(appAccountToken=str(uuid.uuid4())))
                failures.append(f"{name}: Set App Account Token took a renewal's id")
            except APIException as error:
                if error.raw_api_error != 4000187:
                    failures.append(f"{name}: a renewal's id got {error.raw_api_error}, not Apple's 4000187")
        else:
            failures.append(f"{name}: the subscription did not renew, so the not-original case went untested")

        # RESCIND_CONSENT carries the customer's signed app transaction instead of `data`.
        rescinded = sim("POST", f"/sim/devices/{device}/rescind-consent")
        decoded = judge.verify("notification", rescinded["signedPayload"], f"{name} rescind consent")
        if decoded is not None and (decoded.appData is None or decoded.rawNotificationType != "RESCIND_CONSENT"):
            failures.append(f"{name}: RESCIND_CONSENT decoded without appData or as {decoded.rawNotificationType}")

        # Every notification the simulator made in this environment, from its history.
        now_ms = int(sim("GET", "/sim/clock")["nowMs"])
        token = None
        first_token = None
        seen = 0
        while True:
            try:
                page = client.get_notification_history(token, NotificationHistoryRequest(startDate=started_ms - 60_000, endDate=now_ms + 60_000))
            except APIException as error:
                failures.append(f"{name} notification history: {error.http_status_code} {error.raw_api_error} {error.error_message}")
                break
            for item in page.notificationHistory or []:
                seen += 1
                judge.verify("notification", item.signedPayload, f"{name} notification history")
            if not page.hasMore:
                break
            token = page.paginationToken
            first_token = first_token or token
        if seen < 5:
            failures.append(f"{name}: only {seen} notifications in the history; the life above makes more")

        # The filters of the Server API, and Apple's error codes for what it refuses. Auto-renew
        # is off and the renewed period still runs; the last check lets it lapse.
        app_transaction_id = payload_of(client.get_app_transaction_info(one_time).signedAppTransactionInfo)["appTransactionId"]
        guarded(f"{name} history filters", lambda: check_history_filters(name, client, subscription, app_transaction_id))
        guarded(f"{name} statuses", lambda: check_statuses_while_running(name, client, subscription, monthly))
        guarded(f"{name} notification filters", lambda: check_notification_filters(
            name, client, transaction_ids, (started_ms - 60_000, now_ms + 60_000), first_token))
        guarded(f"{name} malformed ids", lambda: check_malformed_ids(name, client, subscription, coins, app_transaction_id))
        guarded(f"{name} statuses after expiry", lambda: check_statuses_after_expiry(name, client, subscription))

    for what, number in sorted(counts.items()):
        print(f"apple-library: {number} {what}")
    for failure in failures:
        print(f"apple-library: FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
