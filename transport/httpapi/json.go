package httpapi

import (
	kjson "sigs.k8s.io/json"
)

// jsonUnmarshalStrictCase decodes the way apimachinery's serializers do: case-sensitive keys,
// so that "Type" and "type" are not confused.
func jsonUnmarshalStrictCase(data []byte, v any) error {
	return kjson.UnmarshalCaseSensitivePreserveInts(data, v)
}
