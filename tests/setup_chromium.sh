#!/usr/bin/env bash
# Install Debian's chromium for the HTML report's browser test (tests/test_htmlreport_chromium.py).
# Idempotent: does nothing when /usr/bin/chromium exists; installs with apt-get only as root.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "setup_chromium.sh: /usr/bin/chromium is missing and we are not root;" \
         "install Debian's 'chromium' package (apt-get install chromium)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium
test -x /usr/bin/chromium
