/** A text field of a submitted form: its value, or '' when the form has no such field (or it holds a file). */
export function textField(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value : '';
}
