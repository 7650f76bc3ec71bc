package bench

import (
	"context"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rewatch/rewatch/internal/apiserver"
)

// throttleFleet puts every request of the fleet's user in a priority level of its own with one
// share of the server's concurrency and a queue of two: API Priority and Fairness then answers
// what does not fit with 429 and its own Retry-After, as it does for a fleet that asks a
// production server too much. With reject, the level queues nothing: what finds no free seat is
// rejected at once.
func throttleFleet(ctx context.Context, cs kubernetes.Interface, reject bool) error {
	one, none := int32(1), int32(0)
	limit := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
		Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 2}}
	if reject {
		limit = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	}
	plc := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &one, LendablePercent: &none,
				LimitResponse: limit,
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "fleet"},
			MatchingPrecedence:         100,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: apiserver.LimitedUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					Namespaces: []string{"*"}, ClusterScope: true}},
			}},
		},
	}
	if _, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, plc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("priority level: %w", err)
	}
	if _, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("flow schema: %w", err)
	}
	return nil
}
