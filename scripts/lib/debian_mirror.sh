# Sourced by the scripts that fetch from Debian: sets `mirror` to the Debian archive this
# machine's apt uses (the first non-security URI of its deb822 or one-line sources), so that
# they fetch from the same registry.
mirror=$(sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
                -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' \
           /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -n1) || true
if [ -z "$mirror" ]; then
  echo "$(basename "$0"): no Debian archive in /etc/apt/sources.list or /etc/apt/sources.list.d" >&2
  exit 2
fi
