package controllers

// The operator is the steward of calls and approvals: the toolgate-record admission policy
// (config/admission/record-policy.yaml) lets only whoever RBAC grants update on
// toolcalls/finalizers (toolcallapprovals/finalizers) change their ownerReferences,
// finalizers and toolgate.dev/ labels and annotations. The same permission is what
// Kubernetes' OwnerReferencesPermissionEnforcement admission plugin asks of the operator
// when it creates a Job whose controller reference (blockOwnerDeletion) names a ToolCall.
// It allows nothing by itself: a metadata write needs update or patch on the resource too.

// +kubebuilder:rbac:groups=toolgate.dev,resources=toolcalls/finalizers;toolcallapprovals/finalizers,verbs=update
