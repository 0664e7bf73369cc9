# Sourced by the tools' entry points: make sure python3 is there (a fresh
# Debian 12 may not have it), installing it when running as root.
if ! command -v python3 >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "deps: installing python3" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3 >/dev/null 2>&1 ||
			{ apt-get update -q >/dev/null 2>&1 &&
			  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3 >/dev/null 2>&1; } ||
			{ echo "deps: cannot install python3" >&2; exit 1; }
	else
		echo "python3 not found: install it as root (apt-get install python3)" >&2
		exit 1
	fi
fi
