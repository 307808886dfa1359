// Package autoscale tells which edge objects an autoscaler at the edge scales: the targets of the
// edge's HorizontalPodAutoscalers. Downsync leaves such an object's spec.replicas to the autoscaler
// (a retained field, mapping.FieldPath), so that neither the autoscaler nor `kubectl scale` at the
// edge is fought, and gives it back to the upstream value when the last autoscaler of the object
// goes.
//
// The HorizontalPodAutoscalers are read through an informer of informermanager (kind Signals: its
// cache keeps their names and scale targets only). The package writes nothing.
package autoscale
