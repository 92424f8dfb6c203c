"""The simulator judged by Apple's App Store Server Library (run by scripts/apple-library.sh).

Every check failure is collected and printed; the exit status is 1 if there was any.
"""

import base64
import json
import sys
import time
import typing
import urllib.parse
import urllib.request
import uuid
import warnings

import attr
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from appstoreserverlibrary import signed_data_verifier as verifier_module
from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.AccountTenure import AccountTenure
from appstoreserverlibrary.models.AppTransaction import AppTransaction
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.ConsumptionRequestV1 import ConsumptionRequestV1
from appstoreserverlibrary.models.ConsumptionStatus import ConsumptionStatus
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
from appstoreserverlibrary.models.JWSRenewalInfoDecodedPayload import JWSRenewalInfoDecodedPayload
from appstoreserverlibrary.models.JWSTransactionDecodedPayload import JWSTransactionDecodedPayload
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.ResponseBodyV2DecodedPayload import ResponseBodyV2DecodedPayload
from appstoreserverlibrary.models.StatusResponse import StatusResponse
from appstoreserverlibrary.models.TransactionHistoryRequest import TransactionHistoryRequest
from appstoreserverlibrary.models.UpdateAppAccountTokenRequest import UpdateAppAccountTokenRequest
from appstoreserverlibrary.receipt_utility import ReceiptUtility
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

SIM = sys.argv[1].rstrip("/")
BUNDLE = "com.example.storekeeper.demo"
APP_APPLE_ID = 6_450_000_001
KEY_ID = "CONFORMKEY"
ISSUER = "6a1f0e2b-5c3d-4e7f-8a9b-0c1d2e3f4a5b"
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


def main() -> int:
    # Consumption v1 is what the simulator serves; the library marks it deprecated for v2.
    warnings.simplefilter("ignore", DeprecationWarning)
    check_the_checker()
    route_ocsp_to_simulator()
    key = ec.generate_private_key(ec.SECP256R1())
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    app = next(a for a in sim("GET", "/sim/apps") if a["bundleId"] == BUNDLE)
    app.setdefault("serverAPIKeys", []).append({"keyId": KEY_ID, "issuerId": ISSUER, "publicKeyPEM": public_pem})
    app["appAppleId"] = APP_APPLE_ID
    sim("POST", "/sim/apps", app)
    with urllib.request.urlopen(SIM + "/sim/pki/root.pem", timeout=30) as answer:
        root_pem = answer.read().decode()
    root_der = base64.b64decode("".join(line for line in root_pem.splitlines() if "-----" not in line))
    products = [product["productId"] for product in app["products"]]

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

        # Every notification the simulator made in this environment, from its history.
        now_ms = int(sim("GET", "/sim/clock")["nowMs"])
        token = None
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
        if seen < 5:
            failures.append(f"{name}: only {seen} notifications in the history; the life above makes more")

    for what, number in sorted(counts.items()):
        print(f"apple-library: {number} {what}")
    for failure in failures:
        print(f"apple-library: FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
