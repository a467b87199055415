# shellcheck shell=bash
# OpenLDAP's server and tools for the LDAP sign-in tests (tests/support/slapd.ts starts a throwaway
# directory per test file on a loopback port). Only the binaries are needed: the system service is
# never used. Sourced by ensure-infra.sh.

LDAP_TOOLS=(slapd slapadd slappasswd ldapsearch) # in /usr/sbin and /usr/bin

ensure_ldap_tools() {
  local t todo=0
  for t in "${LDAP_TOOLS[@]}"; do command -v "$t" >/dev/null 2>&1 || todo=1; done
  if [ "$todo" -eq 0 ]; then
    log "ldap      slapd ldap-utils  ok"
    return
  fi
  if [ "$CHECK_ONLY" = 1 ]; then
    missing "ldap: slapd ldap-utils (apt-get install slapd ldap-utils)"
    return
  fi
  apt_install slapd ldap-utils
  for t in "${LDAP_TOOLS[@]}"; do
    command -v "$t" >/dev/null 2>&1 || die "$t still missing after apt-get install slapd ldap-utils"
  done
  log "ldap      slapd ldap-utils  ok (installed)"
}
