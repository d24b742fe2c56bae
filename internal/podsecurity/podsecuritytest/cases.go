// Package podsecuritytest holds pods for the tests of Pod Security on remote namespaces: one
// pod per check of the baseline and restricted levels, each breaking only that check, with the
// words the refusal must say; the attack (a privileged pod with the node's / mounted);
// and pods that meet baseline and restricted.
package podsecuritytest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Case is a pod that breaks one check of Pod Security.
type Case struct {
	// Check is the ID of the check it breaks (k8s.io/pod-security-admission/policy's CheckID).
	Check string
	// Name is a DNS label naming the case (for objects made of it).
	Name string
	// Set makes the pod break the check, from a pod that meets its level.
	Set func(meta *metav1.ObjectMeta, spec *corev1.PodSpec)
	// Want is what the refusal must say: the field at fault.
	Want string
}

// Pod is a pod that meets baseline, with its metadata: one container c running busybox.
func Pod() (*metav1.ObjectMeta, *corev1.PodSpec) {
	return &metav1.ObjectMeta{}, &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}
}

// RestrictedPod is a pod that meets restricted: non-root, no privilege escalation, every
// capability dropped, the runtime's default seccomp profile.
func RestrictedPod() (*metav1.ObjectMeta, *corev1.PodSpec) {
	meta, spec := Pod()
	spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	return meta, spec
}

// Attack is the attack: a privileged container with the node's / mounted.
func Attack(meta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	container(spec).Privileged = ptr.To(true)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "root",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "root", MountPath: "/host"})
}

// AttackWant is what the refusal of Attack must say: both fields at fault.
var AttackWant = []string{`container "c" must not set securityContext.privileged=true`, `hostPath volumes (volume "root")`}

// container returns the first container's security context, made when missing.
func container(spec *corev1.PodSpec) *corev1.SecurityContext {
	if spec.Containers[0].SecurityContext == nil {
		spec.Containers[0].SecurityContext = &corev1.SecurityContext{}
	}
	return spec.Containers[0].SecurityContext
}

// pod returns the pod's security context, made when missing.
func pod(spec *corev1.PodSpec) *corev1.PodSecurityContext {
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return spec.SecurityContext
}

// Baseline are pods that each break one check of baseline (all of them, with host namespaces
// three times), from Pod.
func Baseline() []Case {
	return []Case{
		{"hostNamespaces", "host-network", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.HostNetwork = true }, "spec.hostNetwork"},
		{"hostNamespaces", "host-pid", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.HostPID = true }, "spec.hostPID"},
		{"hostNamespaces", "host-ipc", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.HostIPC = true }, "spec.hostIPC"},
		{"privileged", "privileged", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { container(s).Privileged = ptr.To(true) },
			`container "c" must not set securityContext.privileged=true`},
		{"capabilities_baseline", "capabilities", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			container(s).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
		}, `container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add`},
		{"hostPathVolumes", "host-path", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, `hostPath volumes (volume "root")`},
		{"hostPorts", "host-port", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}, `container "c" uses hostPort 8080`},
		{"hostProbesAndHostLifecycle", "probe-host", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			s.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Port: intstr.FromInt32(80)}}}
		}, `container "c" uses probe or lifecycle host "169.254.169.254"`},
		{"appArmorProfile", "apparmor", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			container(s).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}, `forbidden AppArmor profile (container "c" must not set AppArmor profile type to "Unconfined")`},
		{"seLinuxOptions", "selinux", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			container(s).SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		}, `container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"`},
		{"procMount", "proc-mount", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			container(s).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, `container "c" must not set securityContext.procMount to "Unmasked"`},
		{"seccompProfile_baseline", "seccomp", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			pod(s).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}, `pod must not set securityContext.seccompProfile.type to "Unconfined"`},
		{"sysctls", "sysctls", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			pod(s).Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}
		}, `forbidden sysctls (kernel.msgmax)`},
		{"windowsHostProcess", "windows-host-process", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			pod(s).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}, `pod must not set securityContext.windowsOptions.hostProcess=true`},
	}
}

// Restricted are pods that each break one check of restricted but meet baseline, from
// RestrictedPod.
func Restricted() []Case {
	return []Case{
		{"allowPrivilegeEscalation", "privilege-escalation", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			container(s).AllowPrivilegeEscalation = nil
		}, `container "c" must set securityContext.allowPrivilegeEscalation=false`},
		{"capabilities_restricted", "capabilities-kept", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			container(s).Capabilities = nil
		}, `container "c" must set securityContext.capabilities.drop=["ALL"]`},
		{"runAsNonRoot", "root", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { pod(s).RunAsNonRoot = nil },
			`pod or container "c" must set securityContext.runAsNonRoot=true`},
		{"runAsUser", "uid-0", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { container(s).RunAsUser = ptr.To[int64](0) },
			`container "c" must not set runAsUser=0`},
		{"seccompProfile_restricted", "no-seccomp", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { pod(s).SeccompProfile = nil },
			`pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`},
		{"restrictedVolumes", "nfs", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "share", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/"}}}}
		}, `volume "share" uses restricted volume type "nfs"`},
		{"procMount_restricted", "proc-mount-userns", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			s.HostUsers = ptr.To(false) // in a user namespace: baseline lets it through, restricted does not
			container(s).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, `container "c" must not set securityContext.procMount to "Unmasked"`},
	}
}
