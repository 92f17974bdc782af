# shellcheck shell=bash
# PKI (openssl), static tokens and kubeconfigs. Kept across `down` (so tokens and kubeconfigs
# stay stable); `down --purge` removes them. The serving cert is re-issued when the node
# address changes.

# Static token users: NAME USER GROUPS ("" = only system:authenticated, which is implicit).
TOKEN_USERS=(
  "admin|admin|system:masters"
  "controller-manager|system:kube-controller-manager|system:masters"
  "scheduler|system:kube-scheduler|system:masters"
  "kube-proxy|system:kube-proxy|system:node-proxier"
  "kube-network-policies|system:kube-network-policies|"
  "coredns|system:coredns|"
  "provisioner|system:toolgate-provisioner|"
  "kueue|system:kueue|"
  "kubelet|system:node:$NODE_NAME|system:nodes"
  "agent|agent|"
  "approver|approver|"
)

# issue_cert NAME SUBJECT EXTENSIONS: an EC P-256 key and a CA-signed certificate.
issue_cert() {
  local name="$1" subj="$2" ext="$3"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 825 -extfile <(printf '%s\n' "$ext") \
    -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr"
}

make_ca() {
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=toolgate-local-ca" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$PKI/ca.crt"
}

# ensure_sink_ca: a CA of its own for HTTPS approval sinks (sink-ca.crt/.key), once. `make up`
# installs the chart trusting it (approvalNotifications.caBundle); the e2e notify spec
# (test/e2e/notify_test.go) signs its receiver's serving certificate with it. Separate from
# ca.crt: the operator trusts it for sinks only, never the cluster's CA.
ensure_sink_ca() {
  [ ! -f "$PKI/sink-ca.crt" ] || return 0
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/sink-ca.key" 2>/dev/null
  chmod 600 "$PKI/sink-ca.key"
  openssl req -x509 -new -key "$PKI/sink-ca.key" -subj "/CN=toolgate-local-approval-sink-ca" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$PKI/sink-ca.crt"
}

# make_serving_cert NODE_IP: the apiserver's certificate, valid for every name a client uses.
make_serving_cert() {
  local sans="IP:127.0.0.1,IP:$1,IP:$SERVICE_IP,DNS:localhost,DNS:$NODE_NAME,DNS:kubernetes"
  sans+=",DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue_cert apiserver "/CN=kube-apiserver" "$(printf '%s\n' \
    "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=$sans")"
  echo "$1" >"$PKI/node-ip"
}

# make_tokens: a token for every user that has none yet (the file is read at apiserver start).
make_tokens() {
  local entry name user groups
  touch "$PKI/tokens.csv"
  for entry in "${TOKEN_USERS[@]}"; do
    IFS='|' read -r name user groups <<<"$entry"
    [ -z "$(token_of "$user")" ] || continue
    if [ -n "$groups" ]; then
      printf '%s,%s,%s,"%s"\n' "$(openssl rand -hex 24)" "$user" "$user" "$groups"
    else # a 4th field "" would make a group named ""
      printf '%s,%s,%s\n' "$(openssl rand -hex 24)" "$user" "$user"
    fi >>"$PKI/tokens.csv"
  done
}

# token_of USER: the static token of a user.
token_of() { awk -F, -v u="$1" '$2 == u {print $1; exit}' "$PKI/tokens.csv"; }

# ensure_pki NODE_IP: create what is missing; re-issue the serving cert for a new node address.
ensure_pki() {
  local ip="$1"
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  [ -f "$PKI/ca.crt" ] || make_ca
  if [ ! -f "$PKI/sa.key" ]; then
    openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
  if [ ! -f "$PKI/apiserver.crt" ] || [ "$(cat "$PKI/node-ip" 2>/dev/null)" != "$ip" ]; then
    make_serving_cert "$ip"
  fi
  # The apiserver's client identity towards the kubelet (logs, exec, port-forward).
  [ -f "$PKI/kubelet-client.crt" ] || issue_cert kubelet-client \
    "/O=system:masters/CN=kube-apiserver-kubelet-client" "$(printf '%s\n' \
      "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=clientAuth")"
  ensure_sink_ca
  make_tokens
  chmod 600 "$PKI"/*.key "$PKI/tokens.csv"
}

# write_kubeconfig FILE USER: a token kubeconfig for USER against the local apiserver.
write_kubeconfig() {
  local file="$1" user="$2" token
  token="$(token_of "$user")"
  [ -n "$token" ] || die "no token for $user"
  (
    umask 077
    cat >"$file"
  ) <<EOF
apiVersion: v1
kind: Config
clusters:
- name: toolgate-local
  cluster:
    server: $API_URL
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $user
  user:
    token: $token
contexts:
- name: toolgate-local
  context:
    cluster: toolgate-local
    user: $user
current-context: toolgate-local
EOF
}

ensure_kubeconfigs() {
  local entry name user groups
  mkdir -p "$KUBECONFIGS"
  for entry in "${TOKEN_USERS[@]}"; do
    IFS='|' read -r name user groups <<<"$entry"
    write_kubeconfig "$KUBECONFIGS/$name.kubeconfig" "$user"
  done
  cp "$KUBECONFIGS/admin.kubeconfig" "$ADMIN_KUBECONFIG"
}
