"""A small certificate authority for trying the parties out: one CA, one certificate per party.

``anonlab party fusion.toml --make-certs DIR`` writes ``DIR/ca.crt`` and, for
every party id in the config, ``DIR/<id>.crt`` and ``DIR/<id>.key``. Each
party certificate names its party id as common name and DNS name (what the
peers check) and the party's configured host as an extra name. Keys are
ECDSA P-256, valid for one year. For real deployments use your
organization's CA; the CA key (``DIR/ca.key``) must stay with whoever signs.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from anonlab.errors import AnonlabError
from anonlab.io import write_text

VALID_DAYS = 365


def check_party_id(party: str) -> None:
    """Refuse a party id a certificate cannot name (it becomes the certificate's DNS name)."""
    if not party.isascii() or not party.isprintable():
        raise AnonlabError(
            f"party id {party!r} has non-ASCII or control characters: certificates name the "
            "party id as a DNS name; use ASCII letters, digits, '-', '_' or '.'"
        )


def make_certificates(folder: str | Path, parties: Sequence[tuple[str, str]]) -> list[Path]:
    """Write a CA and one certificate + key per ``(party id, host)``; return the written paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    for party, _ in parties:
        check_party_id(party)
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise AnonlabError(f"certificate folder '{out}' is a file: name a folder")
    now = dt.datetime.now(dt.UTC)
    not_after = now + dt.timedelta(days=VALID_DAYS)

    def pem_key(key: ec.EllipticCurvePrivateKey) -> str:
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")

    def pem_cert(cert: x509.Certificate) -> str:
        return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "anonlab fusion CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    written = [out / "ca.crt", out / "ca.key"]
    write_text(pem_cert(ca_cert), written[0])
    write_text(pem_key(ca_key), written[1], private=True)
    for party, host in parties:
        key = ec.generate_private_key(ec.SECP256R1())
        alt: list[x509.GeneralName] = [x509.DNSName(party)]
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            if host and host != party:
                alt.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, party)]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        cert_path, key_path = out / f"{party}.crt", out / f"{party}.key"
        write_text(pem_cert(cert), cert_path)
        write_text(pem_key(key), key_path, private=True)
        written += [cert_path, key_path]
    return written
