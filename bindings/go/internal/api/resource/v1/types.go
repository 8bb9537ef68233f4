// SPDX-License-Identifier: MIT

package v1

import metav1 "github.com/rdmad/rdmad/bindings/go/internal/apimachinery/meta/v1"

// ResourceSlice is resource.k8s.io/v1 ResourceSlice.
type ResourceSlice struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       ResourceSliceSpec `json:"spec"`
}

// ResourceSliceList is the answer of a list of ResourceSlices.
type ResourceSliceList struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []ResourceSlice `json:"items"`
}

// ResourceSliceSpec: one node's pool of one driver.
type ResourceSliceSpec struct {
	Driver   string       `json:"driver"`
	Pool     ResourcePool `json:"pool"`
	NodeName string       `json:"nodeName"`
	Devices  []Device     `json:"devices"`
}

// ResourcePool: all slices of a pool carry the same generation and count.
type ResourcePool struct {
	Name               string `json:"name"`
	Generation         int64  `json:"generation"`
	ResourceSliceCount int64  `json:"resourceSliceCount"`
}

// Device is one device of a slice.  AllowMultipleAllocations and
// Capacity are set where devices are shared (Options.Slots: the
// DRAConsumableCapacity gate), Taints where a device is sick
// (Options.TaintEffect: the DRADeviceTaints gate).
type Device struct {
	Name                     string                     `json:"name"`
	Attributes               map[string]DeviceAttribute `json:"attributes,omitempty"`
	AllowMultipleAllocations *bool                      `json:"allowMultipleAllocations,omitempty"`
	Capacity                 map[string]DeviceCapacity  `json:"capacity,omitempty"`
	Taints                   []DeviceTaint              `json:"taints,omitempty"`
}

// DeviceCapacity is one capacity of a device: its total, and how a
// claim consumes it.  Quantities are their canonical strings.
type DeviceCapacity struct {
	Value         string                 `json:"value"`
	RequestPolicy *CapacityRequestPolicy `json:"requestPolicy,omitempty"`
}

// CapacityRequestPolicy: what a request that names no amount consumes
// (Default), and which amounts a request may ask (ValidRange).
type CapacityRequestPolicy struct {
	Default    string                      `json:"default,omitempty"`
	ValidRange *CapacityRequestPolicyRange `json:"validRange,omitempty"`
}

// CapacityRequestPolicyRange: from Min to Max in steps of Step.
type CapacityRequestPolicyRange struct {
	Min  string `json:"min"`
	Max  string `json:"max,omitempty"`
	Step string `json:"step,omitempty"`
}

// DeviceTaint is a taint the driver puts on a device (TimeAdded is set
// by the API server where the driver leaves it out).
type DeviceTaint struct {
	Key       string `json:"key"`
	Value     string `json:"value,omitempty"`
	Effect    string `json:"effect"`
	TimeAdded string `json:"timeAdded,omitempty"`
}

// DeviceAttribute has exactly one field set.
type DeviceAttribute struct {
	Int    *int64  `json:"int,omitempty"`
	Bool   *bool   `json:"bool,omitempty"`
	String *string `json:"string,omitempty"`
}

// ClaimStatusApply is what the driver applies to a claim's status
// (server-side apply, its own field manager): its entries of
// status.devices, and nothing else.
type ClaimStatusApply struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Status     ClaimStatus       `json:"status"`
}

// ClaimStatus is the part of ResourceClaimStatus the driver writes.
type ClaimStatus struct {
	Devices []AllocatedDeviceStatus `json:"devices"`
}

// AllocatedDeviceStatus is one device's status in a claim, keyed by
// driver, pool and device (and shareID, which the driver does not use).
type AllocatedDeviceStatus struct {
	Driver      string             `json:"driver"`
	Pool        string             `json:"pool"`
	Device      string             `json:"device"`
	ShareID     string             `json:"shareID,omitempty"`
	Data        interface{}        `json:"data,omitempty"` // RawExtension: the driver's own
	NetworkData *NetworkDeviceData `json:"networkData,omitempty"`
}

// NetworkDeviceData: the device's net device, as dranet reports a
// network device's.
type NetworkDeviceData struct {
	InterfaceName   string   `json:"interfaceName,omitempty"`
	IPs             []string `json:"ips,omitempty"`
	HardwareAddress string   `json:"hardwareAddress,omitempty"`
}

// ResourceClaim is the part of resource.k8s.io/v1 ResourceClaim read.
type ResourceClaim struct {
	Metadata metav1.ObjectMeta   `json:"metadata"`
	Status   ResourceClaimStatus `json:"status"`
}

// ResourceClaimStatus: the allocation, once the scheduler made it.
type ResourceClaimStatus struct {
	Allocation *AllocationResult `json:"allocation,omitempty"`
}

// AllocationResult: the devices allocated.
type AllocationResult struct {
	Devices DeviceAllocationResult `json:"devices"`
}

// DeviceAllocationResult lists every device of every driver.
type DeviceAllocationResult struct {
	Results []DeviceRequestAllocationResult `json:"results"`
}

// DeviceRequestAllocationResult is one device given to one request:
// for administrative access (AdminAccess), or a share of a device that
// allows multiple allocations (ShareID, with the capacity it consumes).
type DeviceRequestAllocationResult struct {
	Request          string            `json:"request"`
	Driver           string            `json:"driver"`
	Pool             string            `json:"pool"`
	Device           string            `json:"device"`
	AdminAccess      *bool             `json:"adminAccess,omitempty"`
	ShareID          string            `json:"shareID,omitempty"`
	ConsumedCapacity map[string]string `json:"consumedCapacity,omitempty"`
}

// Limits of resource.k8s.io/v1 (its OpenAPI schema's descriptions).
const (
	ResourceSliceMaxDevices           = 128 // devices in one slice
	ResourceSliceMaxDevicesWithTaints = 64  // devices in one slice where one has taints
	// ResourceSliceMaxAttributesAndCapacitiesPerDevice: of one device.
	ResourceSliceMaxAttributesAndCapacitiesPerDevice = 32
	DeviceAttributeMaxValueLength                    = 64 // characters of a string attribute
)
