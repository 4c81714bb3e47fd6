/** Outgoing email over SMTP (nodemailer), configured by `SMTP_URL`; absent, the dashboard sends no email. */
import { createTransport } from 'nodemailer';
import type { Config } from '../config/index.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
}

export function smtpMailer(smtp: Config['smtp']): Mailer | undefined {
  if (!smtp.url) return undefined;
  const transport = createTransport(smtp.url);
  return {
    async send(mail) {
      await transport.sendMail({ from: smtp.from, ...mail });
    },
  };
}

export function verificationMail(to: string, link: string, ttlHours: number, creditUsd: number): Mail {
  const credit = creditUsd > 0 ? `, and your ${creditUsd} USD of free credit will be added` : '';
  return {
    to,
    subject: 'Confirm your email for tollgate',
    text: [
      'Someone (we hope you) created a tollgate account with this email address.',
      '',
      `Open this link to confirm it${credit}:`,
      '',
      link,
      '',
      `The link works once, for ${ttlHours} hours. If you did not sign up, ignore this email: nothing happens without the link.`,
      '',
    ].join('\n'),
  };
}

export function alreadyRegisteredMail(to: string, signInLink: string): Mail {
  return {
    to,
    subject: 'Your tollgate account',
    text: [
      'Someone tried to create a tollgate account with this email address, but you already have one.',
      '',
      `If it was you, sign in instead: ${signInLink}`,
      '',
      'If it was not you, ignore this email: your account has not changed.',
      '',
    ].join('\n'),
  };
}

export function invitationMail(to: string, link: string, accountEmail: string, role: string): Mail {
  return {
    to,
    subject: 'You are invited to a tollgate account',
    text: [
      `You are invited to join the tollgate account of ${accountEmail} as ${role}.`,
      '',
      'Open this link to accept:',
      '',
      link,
      '',
      'The link works once, for 7 days. If you do not expect this, ignore this email.',
      '',
    ].join('\n'),
  };
}
